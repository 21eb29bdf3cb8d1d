import math

import numpy as np
import pytest

from analysis.stats import diff_ci, mean_ci, min_samples, quantile, ratio_ci, t_critical


@pytest.mark.parametrize("q, n", [(0.5, 20), (0.9, 100), (0.99, 1000), (0.999, 10000)])
def test_min_samples_is_ten_over_one_minus_q(q, n):
    assert min_samples(q) == n


def test_quantile_needs_enough_samples_else_reports_max():
    few = quantile(np.arange(19.0), 0.5)
    assert few.is_max and few.value == 18.0 and few.n == 19
    assert str(few) == "max 18.00 (n=19)"
    assert few.number == 18.0 and few.rule == "max (n=19)"
    enough = quantile(np.arange(20.0), 0.5)
    assert not enough.is_max and enough.value == pytest.approx(9.5)
    assert enough.number == pytest.approx(9.5) and enough.rule == "p50 (n=20)"


def test_p99_switches_at_1000_samples():
    assert quantile(np.arange(999.0), 0.99).is_max
    q = quantile(np.arange(1000.0), 0.99)
    assert not q.is_max and q.value == pytest.approx(np.quantile(np.arange(1000.0), 0.99))


def test_quantile_ignores_nan_and_handles_empty():
    assert quantile([math.nan] * 30, 0.5).n == 0
    assert math.isnan(quantile([], 0.5).number) and quantile([], 0.5).rule == "none (n=0)"
    assert quantile([1.0] * 20 + [math.nan], 0.5).n == 20


def test_mean_ci_uses_student_t():
    e = mean_ci([1, 2, 3, 4, 5])
    h = 2.7764451 * math.sqrt(2.5) / math.sqrt(5)
    assert e.mean == 3 and e.lo == pytest.approx(3 - h) and e.hi == pytest.approx(3 + h)
    assert e.n == 5
    assert t_critical(30) == pytest.approx(2.0423, abs=1e-4)


def test_mean_ci_single_sample_has_no_interval():
    e = mean_ci([4.0])
    assert e.mean == 4.0 and math.isnan(e.lo) and math.isnan(e.hi)
    assert str(e) == "4 (n=1)"


def test_paired_ratio_of_exact_multiples_has_zero_width():
    e = ratio_ci([2.0, 4.0, 8.0], [1.0, 2.0, 4.0], paired=True)
    assert (e.mean, e.lo, e.hi) == pytest.approx((2.0, 2.0, 2.0))


def test_unpaired_ratio_is_ratio_of_geometric_means():
    e = ratio_ci([2.0, 8.0], [1.0, 4.0], paired=False)
    assert e.mean == pytest.approx(2.0)
    assert e.lo < 2.0 < e.hi
    # the interval of the inverse ratio is the inverse interval
    inv = ratio_ci([1.0, 4.0], [2.0, 8.0], paired=False)
    assert inv.lo == pytest.approx(1 / e.hi) and inv.hi == pytest.approx(1 / e.lo)


def test_diff_ci_paired_vs_welch():
    a, b = [1.0, 2.0, 3.0], [0.0, 1.0, 2.0]
    p = diff_ci(a, b, paired=True)
    assert (p.mean, p.lo, p.hi) == pytest.approx((1.0, 1.0, 1.0))
    w = diff_ci(a, b, paired=False)  # equal variances 1, n=3: se=sqrt(2/3), df=4
    h = 2.7764451 * math.sqrt(2 / 3)
    assert w.mean == pytest.approx(1.0) and w.hi - w.mean == pytest.approx(h)


def test_paired_needs_equal_lengths():
    with pytest.raises(ValueError):
        diff_ci([1.0], [1.0, 2.0], paired=True)


def test_cut_is_the_arithmetic_mean_of_paired_cuts_with_a_t_interval():
    from analysis.stats import cut_ci, mean_ci, ratio_ci

    a, b = np.array([50.0, 90.0, 80.0]), np.array([100.0, 100.0, 100.0])
    c = cut_ci(a, b, paired=True)
    assert c.mean == pytest.approx(np.mean([0.5, 0.1, 0.2]))
    assert (c.lo, c.hi) == pytest.approx((mean_ci([0.5, 0.1, 0.2]).lo, mean_ci([0.5, 0.1, 0.2]).hi))
    geo = 1 - ratio_ci(a, b, paired=True).mean  # the geometric mean cut is another number
    assert geo != pytest.approx(c.mean)


def test_unpaired_cut_is_one_minus_the_ratio_of_means():
    from analysis.stats import cut_ci

    c = cut_ci([40.0, 60.0], [90.0, 110.0, 100.0], paired=False)
    assert c.mean == pytest.approx(0.5) and c.lo < 0.5 < c.hi


def test_cluster_bootstrap_resamples_seeds_and_is_reproducible():
    from analysis.stats import cluster_bootstrap

    values = np.array([1.0, 1.1, 1.2, 2.0, 2.1, 2.2, 3.0, 3.1, 3.2])
    seeds = np.repeat([0, 1, 2], 3)
    lo, hi = cluster_bootstrap(values, seeds, [0.5, 1.0])
    lo2, hi2 = cluster_bootstrap(values, seeds, [0.5, 1.0])
    assert np.array_equal(lo, lo2) and np.array_equal(hi, hi2)  # seeded
    assert lo[1] <= values.max() and hi[1] == pytest.approx(values.max())  # a max's top is it
    assert lo[0] < np.median(values) < hi[0]
    one = cluster_bootstrap(values, np.zeros(9), [0.5])
    assert np.isnan(one[0]).all() and np.isnan(one[1]).all()  # one seed: no interval


def test_null_of_a_max_is_the_max_of_as_many_null_values():
    from analysis.stats import null_quantiles

    null = np.arange(1.0, 101.0)  # one seed, 100 calm values 1..100
    few = null_quantiles(null, np.zeros(100), {0: 1}, [1.0])  # a max over 1 event: any value
    many = null_quantiles(null, np.zeros(100), {0: 50}, [1.0])  # over 50: nearly the top
    assert few[0] == pytest.approx(95.0, abs=2.0) and many[0] == 100.0
    again = null_quantiles(null, np.zeros(100), {0: 1}, [1.0])
    assert again[0] == few[0]  # seeded
    assert np.isnan(null_quantiles(null, np.zeros(100), {1: 3}, [0.5])).all()  # seed 1: none
