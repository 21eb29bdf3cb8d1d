"""The fidelity verdict: did the emulator's CPU distort the timing it measured?

Waiting for a CPU is not damage by itself: on this 2-core machine every worker waits a third of
a round for a CPU, yet calm rounds run at 1.1x the pacing bound. So the verdict judges the
invariants the protocol's own timing rests on (Mininet-HiFi's idea, CoNEXT'12), per rank and
round (`total` rows, warm-up excluded):

- **loop lateness** — `loop_late_ms`, how late the transport's event loop woke after its
  timer (pacer tick, idle detector, deadlines) — against the protocol's smallest time constant
  and the round itself: a round is *late* when its loop woke later than max(one idle gap,
  LATE_OF_ROUND x its latency). More than UNFAITHFUL_SHARE of late rounds make a run unfaithful.
- **pacing on calm rounds** — a rank's round latency over its own sending bound (its wire
  bytes at its pacing rate), on rounds that overlap no burst: the median above
  CALM_BOUND_MAX says the senders could not keep the rate the emulated link promises. Under
  bursts it is judged on MIN_CALM_ROUNDS distinct calm rounds or more; with fewer it is only
  reported.

The CPU-wait share stays a reported figure, not the verdict. A run with nothing to judge
(probes, tcp has no event loop of ours: only its pacing is judged) is faithful unless an
invariant it has breaks. The sham-vs-none shift is a sweep-level check (`sham_shift`), shown
in the report's validity section.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from analysis import schema
from analysis.windows import in_burst

#: A round's loop may wake this late relative to its latency before the round is "late".
LATE_OF_ROUND = 0.10
#: More late rounds than this share make a run unfaithful.
UNFAITHFUL_SHARE = 0.05
#: Calm rounds slower than this many times their pacing bound (median) make a run unfaithful.
CALM_BOUND_MAX = 1.5
#: Under bursts, fewer calm rounds than this and the pacing invariant is reported, not judged
#: (the quantile rule's 10 / (1 - q) for a median): under a dense preset a training run may
#: have a handful of calm rounds, each just after a burst and carrying its after-effects (a tcp
#: sender still backing off), which say nothing about the CPU. Without bursts every round is
#: calm and clean, so a short run (a calibration) is judged on all of them.
MIN_CALM_ROUNDS = 20
#: The idle gap when a run.json does not say (the transport's floor: 2 ms).
DEFAULT_GAP_MS = 2.0
#: Bytes a datagram costs on the wire beyond its float32 payload: header, IPv4/UDP, Ethernet.
DGRAM_OVERHEAD = 40 + 28 + 14
#: The sham preset may move the calm p50 by at most this much against none (same spec).
SHAM_SHIFT_MAX = 0.10


@dataclass(frozen=True)
class Fidelity:
    faithful: bool
    judged_rounds: int = 0
    late_rounds: int = 0
    calm_rounds: int = 0
    calm_bound_ratio: float | None = None  # median over calm rounds of latency / sending bound
    cpu_wait_share: float | None = None  # median run-queue wait / latency (reported only)
    reasons: tuple[str, ...] = field(default_factory=tuple)

    def as_dict(self) -> dict[str, Any]:
        return {
            "faithful": self.faithful,
            "judged_rounds": self.judged_rounds,
            "late_rounds": self.late_rounds,
            "calm_rounds": self.calm_rounds,
            "calm_bound_ratio": self.calm_bound_ratio,
            "cpu_wait_share": self.cpu_wait_share,
            "reasons": list(self.reasons),
        }


def _pace_mbps(info: schema.RunInfo) -> float | None:
    """The emulated rate a rank's sends are bounded by: the UDP pacer's (which runs D times
    slower under dilation D, while the tables hold undilated times), else the link's (tcp)."""
    rate = (info.transport_params.get("config") or {}).get("rate_mbps")
    if rate:
        return float(rate) * max(info.dilation, 1.0)
    bw = info.spec.get("bw")
    return float(bw) if bw else None


def _wire_bytes(payload: pd.Series, mtu: int) -> pd.Series:
    """float32 payload bytes as the L2 bytes their datagrams cost."""
    per_dgram = (mtu - 28 - 40) // 4 * 4
    return payload + np.ceil(payload / per_dgram) * DGRAM_OVERHEAD


def judge(rounds: pd.DataFrame, bursts: pd.DataFrame, info: schema.RunInfo) -> Fidelity:
    """The verdict on one run's rounds (all ranks) given its bursts and run.json."""
    r = rounds[(rounds["stage"] == "total") & ~rounds["is_warmup"]]
    if r.empty:
        return Fidelity(True)
    reasons = []
    # the transport's gap is wall-clock (D x longer under dilation D); the tables are not
    gap_ms = float(info.transport_params.get("gap_ms") or DEFAULT_GAP_MS) / max(info.dilation, 1.0)
    late_ms = r["loop_late_ms"]
    measured = late_ms.notna()
    limit = (LATE_OF_ROUND * r["latency_ms"]).clip(lower=gap_ms)
    late = int((late_ms[measured] > limit[measured]).sum())
    judged = int(measured.sum())
    if judged and late > UNFAITHFUL_SHARE * judged:
        reasons.append(
            f"{late}/{judged} rounds: the transport loop woke later than max(idle gap "
            f"{gap_ms:.1f} ms, {LATE_OF_ROUND:.0%} of the round) after its timer"
        )
    calm = r[~in_burst(r, bursts)] if not bursts.empty else r
    ratio = None
    pace = _pace_mbps(info)
    if pace and not calm.empty and (calm["bytes"] > 0).any():
        calm = calm[calm["bytes"] > 0]
        mtu = int(info.spec.get("mtu") or 1500)
        bound_ms = _wire_bytes(calm["bytes"].astype(float), mtu) * 8 / (pace * 1e3)
        if info.spec.get("collective") == "ps":
            # a worker sends its bucket S at pace / N (the server's link takes N at once), and
            # the round is the server's link twice over N buckets: 2 N S / B, not S / pace
            bound_ms = bound_ms * 2 * int(info.spec.get("workers") or 1)
        ratio = float((calm["latency_ms"] / bound_ms).median())
        enough = bursts.empty or calm["round"].nunique() >= MIN_CALM_ROUNDS
        if ratio > CALM_BOUND_MAX and enough:
            reasons.append(
                f"calm rounds ran at {ratio:.2f}x their pacing bound (> {CALM_BOUND_MAX}): "
                "the senders could not keep the emulated rate"
            )
    wait = (r["cpu_wait_ms"] / r["latency_ms"].where(r["latency_ms"] > 0)).median()
    return Fidelity(
        faithful=not reasons,
        judged_rounds=judged,
        late_rounds=late,
        calm_rounds=len(calm),
        calm_bound_ratio=ratio,
        cpu_wait_share=None if pd.isna(wait) else float(wait),
        reasons=tuple(reasons),
    )


def judge_run(run_dir: Path) -> Fidelity:
    """The verdict from a run folder's own files (rounds, bursts, run.json)."""
    info = schema.RunInfo.model_validate_json((Path(run_dir) / "run.json").read_text())
    rounds = schema.read_table(run_dir, "rounds")
    bursts = schema.read_table(run_dir, "bursts")
    return judge(rounds, bursts, info)


def sham_shift(
    calm_p50: pd.DataFrame, keys: tuple[str, ...] = ("workload", "transport")
) -> pd.DataFrame:
    """Sweep-level control: per group (`keys`), the calm-round p50 under the control preset
    (preset_role "control": sham) against the calm one ("calm": none), medians over the
    group's runs. A shift beyond SHAM_SHIFT_MAX says the bursts' CPU cost alone moves latency.

    calm_p50 has the key columns, preset_role and p50_ms (one row per run or per group); the
    result has the keys, none_p50_ms (calm), sham_p50_ms (control), shift (control / calm - 1)
    and faithful.
    """
    cols = [*keys, "none_p50_ms", "sham_p50_ms", "shift", "faithful"]
    piv = calm_p50.pivot_table(
        index=list(keys), columns="preset_role", values="p50_ms", aggfunc="median"
    )
    if "control" not in piv or "calm" not in piv:
        return pd.DataFrame(columns=cols)
    both = piv[["calm", "control"]].dropna()
    out = pd.DataFrame(
        {
            "none_p50_ms": both["calm"],
            "sham_p50_ms": both["control"],
            "shift": both["control"] / both["calm"] - 1.0,
        }
    ).reset_index()
    out["faithful"] = out["shift"].abs() <= SHAM_SHIFT_MAX
    return out[cols]
