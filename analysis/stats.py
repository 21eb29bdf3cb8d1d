"""Statistics with honest sample sizes: the quantile rule and confidence intervals.

A tail quantile from too few samples is just the maximum in disguise, so a quantile q is
reported only with at least 10/(1-q) samples (p50: 20, p99: 1000); otherwise the table says
"max X (n=N)". Repeats aggregate to mean ± a 95% t-interval; ratios and differences between
transports pair repeats when they share seeds (same bursts), else use Welch's approximation.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats as _sp

LEVEL = 0.95


def min_samples(q: float) -> int:
    """Samples needed before quantile q is trusted: ceil(10 / (1 - q))."""
    if not 0.0 <= q < 1.0:
        raise ValueError(f"quantile must be in [0, 1), got {q}")
    # round first: 10 / (1 - 0.99) is 1000.0000000000009 in floating point
    return math.ceil(round(10.0 / (1.0 - q), 9))


@dataclass(frozen=True)
class Quantile:
    """A quantile, or the maximum when there were too few samples for it."""

    q: float
    value: float
    n: int
    is_max: bool

    def __str__(self) -> str:
        if self.n == 0:
            return "n/a (n=0)"
        if self.is_max:
            return f"max {self.value:.2f} (n={self.n})"
        return f"{self.value:.2f}"

    @property
    def number(self) -> float:
        """The value a table's numeric column holds: the quantile, or the maximum when there
        were too few samples (see `rule`); NaN with no samples."""
        return math.nan if self.n == 0 else self.value

    @property
    def rule(self) -> str:
        """What `number` is: "p99 (n=1200)", "max (n=59)" (too few samples), "none (n=0)"."""
        if self.n == 0:
            return "none (n=0)"
        if self.is_max:
            return f"max (n={self.n})"
        return f"p{100 * self.q:g} (n={self.n})"


def quantile(values: Sequence[float] | np.ndarray, q: float) -> Quantile:
    """Quantile q of the finite values, under the 10/(1-q) sample rule."""
    x = np.asarray(values, dtype=float)
    x = x[np.isfinite(x)]
    n = int(x.size)
    if n == 0:
        return Quantile(q, math.nan, 0, True)
    if n < min_samples(q):
        return Quantile(q, float(x.max()), n, True)
    return Quantile(q, float(np.quantile(x, q)), n, False)


@dataclass(frozen=True)
class Estimate:
    """A mean with a two-sided confidence interval; lo/hi are NaN with fewer than 2 samples."""

    mean: float
    lo: float
    hi: float
    n: int

    @property
    def half_width(self) -> float:
        return (self.hi - self.lo) / 2.0

    def __str__(self) -> str:
        if self.n == 0 or math.isnan(self.mean):
            return "n/a"
        if math.isnan(self.lo):
            return f"{self.mean:.3g} (n={self.n})"
        return f"{self.mean:.3g} ± {self.half_width:.2g} (n={self.n})"


def t_critical(df: float, level: float = LEVEL) -> float:
    """Two-sided Student-t critical value."""
    return float(_sp.t.ppf(0.5 + level / 2.0, df))


def _finite(values: Sequence[float] | np.ndarray) -> np.ndarray:
    x = np.asarray(values, dtype=float)
    return x[np.isfinite(x)]


def mean_ci(values: Sequence[float] | np.ndarray, level: float = LEVEL) -> Estimate:
    """Mean ± t-interval over repeats (NaNs dropped)."""
    x = _finite(values)
    n = int(x.size)
    if n == 0:
        return Estimate(math.nan, math.nan, math.nan, 0)
    m = float(x.mean())
    if n < 2:
        return Estimate(m, math.nan, math.nan, n)
    h = t_critical(n - 1, level) * float(x.std(ddof=1)) / math.sqrt(n)
    return Estimate(m, m - h, m + h, n)


def _welch(a: np.ndarray, b: np.ndarray, level: float) -> tuple[float, float] | None:
    """(standard error, t critical) of mean(a) - mean(b), or None if a side has < 2 samples."""
    if a.size < 2 or b.size < 2:
        return None
    va, vb = a.var(ddof=1) / a.size, b.var(ddof=1) / b.size
    se = math.sqrt(va + vb)
    if se == 0.0:
        return 0.0, 0.0
    df = (va + vb) ** 2 / (va**2 / (a.size - 1) + vb**2 / (b.size - 1))
    return se, t_critical(df, level)


def diff_ci(
    a: Sequence[float] | np.ndarray,
    b: Sequence[float] | np.ndarray,
    paired: bool,
    level: float = LEVEL,
) -> Estimate:
    """mean(a) - mean(b): paired differences (same seeds) or Welch's unpaired interval."""
    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if paired:
        if x.shape != y.shape:
            raise ValueError("paired samples need equal lengths")
        return mean_ci(x - y, level)
    x, y = _finite(x), _finite(y)
    if x.size == 0 or y.size == 0:
        return Estimate(math.nan, math.nan, math.nan, 0)
    m = float(x.mean() - y.mean())
    w = _welch(x, y, level)
    n = int(min(x.size, y.size))
    if w is None:
        return Estimate(m, math.nan, math.nan, n)
    se, t = w
    return Estimate(m, m - t * se, m + t * se, n)


def ratio_ci(
    num: Sequence[float] | np.ndarray,
    den: Sequence[float] | np.ndarray,
    paired: bool,
    level: float = LEVEL,
) -> Estimate:
    """A ratio of positive quantities with a CI, computed on the log scale.

    Paired: the geometric mean of the per-repeat ratios with a t-interval on their logs.
    Unpaired: ratio of geometric means, Welch interval on the difference of mean logs.
    Log scale keeps the interval positive and symmetric for a ratio and its inverse.
    """
    x, y = np.asarray(num, dtype=float), np.asarray(den, dtype=float)
    if paired and x.shape != y.shape:
        raise ValueError("paired samples need equal lengths")
    with np.errstate(divide="ignore", invalid="ignore"):
        lx, ly = np.log(x), np.log(y)
    if paired:
        e = mean_ci(lx - ly, level)
    else:
        e = diff_ci(_finite(lx), _finite(ly), paired=False, level=level)
    return Estimate(math.exp(e.mean), math.exp(e.lo), math.exp(e.hi), e.n)


def cut_ci(
    num: Sequence[float] | np.ndarray,
    den: Sequence[float] | np.ndarray,
    paired: bool,
    level: float = LEVEL,
) -> Estimate:
    """The cut 1 - num/den of a time, as an arithmetic mean with a t-interval.

    Paired (same seeds): the mean of the per-seed cuts 1 - num_i/den_i and its t-interval.
    Unpaired: 1 - mean(num)/mean(den), with Welch's interval on mean(den) - mean(num) over
    mean(den) (den's mean taken as known). `ratio_ci` gives the geometric-mean counterpart."""
    x, y = np.asarray(num, dtype=float), np.asarray(den, dtype=float)
    if paired:
        if x.shape != y.shape:
            raise ValueError("paired samples need equal lengths")
        with np.errstate(divide="ignore", invalid="ignore"):
            return mean_ci(1.0 - x / y, level)
    x, y = _finite(x), _finite(y)
    if x.size == 0 or y.size == 0 or y.mean() == 0:
        return Estimate(math.nan, math.nan, math.nan, 0)
    d = diff_ci(y, x, paired=False, level=level)
    s = float(y.mean())
    return Estimate(d.mean / s, d.lo / s, d.hi / s, d.n)


#: Resamples of a bootstrap, and its seed: a fixed seed keeps a report byte-reproducible.
BOOTSTRAP_RESAMPLES = 2000
BOOTSTRAP_SEED = 19


def cluster_bootstrap(
    values: Sequence[float] | np.ndarray,
    clusters: Sequence[object] | np.ndarray,
    qs: Sequence[float],
    level: float = LEVEL,
    resamples: int = BOOTSTRAP_RESAMPLES,
    seed: int = BOOTSTRAP_SEED,
) -> tuple[np.ndarray, np.ndarray]:
    """Percentile intervals (lo, hi arrays, one per q) of the quantiles qs of values,
    resampling whole clusters (seeds) with replacement, not single values: values from one
    seed share its bursts and its noise, so they are not independent. NaN with < 2 clusters."""
    x = np.asarray(values, dtype=float)
    c = np.asarray(clusters)
    keep = np.isfinite(x)
    x, c = x[keep], c[keep]
    groups = [x[c == k] for k in np.unique(c)]
    nan = np.full(len(qs), math.nan)
    if len(groups) < 2:
        return nan, nan.copy()
    rng = np.random.default_rng(seed)
    draws = rng.integers(0, len(groups), size=(resamples, len(groups)))
    stats = np.array([np.quantile(np.concatenate([groups[i] for i in d]), qs) for d in draws])
    tail = (1.0 - level) / 2.0
    return np.quantile(stats, tail, axis=0), np.quantile(stats, 1.0 - tail, axis=0)


def null_quantiles(
    values: Sequence[float] | np.ndarray,
    clusters: Sequence[object] | np.ndarray,
    counts: dict,
    qs: Sequence[float],
    level: float = LEVEL,
    resamples: int = BOOTSTRAP_RESAMPLES,
    seed: int = BOOTSTRAP_SEED,
) -> np.ndarray:
    """The null of each quantile q in qs of a statistic taken over `counts[c]` values of each
    cluster c: draw that many of the cluster's null values (without replacement when it has
    enough), take the quantiles of the draw, and repeat; returns, per q, the `level` quantile
    of those draws (a max over 14 events is held against the max of 14 null values, not
    against one null value). NaN where a cluster in counts has no null values."""
    x = np.asarray(values, dtype=float)
    c = np.asarray(clusters)
    keep = np.isfinite(x)
    x, c = x[keep], c[keep]
    rng = np.random.default_rng(seed)
    parts = []
    for k, n in sorted(counts.items()):
        pool = x[c == k]
        if pool.size == 0:
            return np.full(len(qs), math.nan)
        if pool.size >= n:
            idx = np.argsort(rng.random((resamples, pool.size)), axis=1)[:, :n]
        else:
            idx = rng.integers(0, pool.size, size=(resamples, n))
        parts.append(pool[idx])
    if not parts:
        return np.full(len(qs), math.nan)
    draws = np.quantile(np.concatenate(parts, axis=1), qs, axis=1)
    return np.quantile(draws, level, axis=1)
