"""The names every table agrees on: group keys, the paper's published figures, the event
statistic's columns, the labels of an ε policy.

No transport or preset name lives here: who is a system, a baseline, exact, or a calm
reference is read from run.json (`analysis.tables.roles`)."""

GROUP = ["workload", "label", "preset"]
#: A bounded-time transport's mode that adapts its timeout (under a hard cap); "fixed" waits
#: for the cap.
ADAPTIVE_MODE = "adaptive"
#: The ε policy of a phase-aware transport whose adaptive phase controller ran (mode "on":
#: ε_critical in critical phases, else ε_stable).
PHASE_AWARE = "phase-aware"
#: The ε policy of an exact transport (it has no ε: nothing is lost).
EXACT_POLICY = "exact (no ε)"
#: Published figures of the DBLP paper: its system against its own baseline, so they belong
#: to the paper's comparison only.
PUBLISHED = {"e2e_reduction_mean": 0.244, "e2e_reduction_max": 0.339, "event_ratio_max": 5.88}
#: The time-to-accuracy target: this fraction of the exact control's mean final accuracy on
#: the same recipe (`analysis.tables.targets`).
TARGET_FRACTION = 0.9
#: What makes two runs the same recipe, beside workload and preset: the spec's training
#: fields (everything but the transport and the seed).
RECIPE_FIELDS = ("model", "epochs", "steps", "batch_size", "lr", "resync_every", "workers")
#: Quantiles of the per-event ratios the events table reports (the paper's "up to" is the max).
EVENT_QUANTILES = {"median": 0.5, "p90": 0.9, "max": 1.0}
#: The per-event statistic's columns, wherever it is shown (events, paper, timeout axis).
#: Each quantile with its seed-cluster bootstrap interval (`_lo`, `_hi`), then the calm-round
#: ratio and the null: how many paired burst-free rounds, and each quantile's null p95.
EVENT_STATS = [
    "events",
    "seeds",
    *(f"event_ratio_{k}{end}" for k in EVENT_QUANTILES for end in ("", "_lo", "_hi")),
    "calm_ratio",
    "null_rounds",
    *(f"null_{k}_p95" for k in EVENT_QUANTILES),
]
#: The quantile of its null a per-event ratio must exceed to count as an effect.
NULL_LEVEL = 0.95
#: The pinned ε whose training time phase-aware ε is held against: its stable-phase ε.
FAST_EPSILON = 0.2
