"""The names every table agrees on: group keys, which transports are baselines and which
the published system, the paper's published figures, the event statistic's columns.

Transport and preset names live here once, so a table never spells one as a literal."""

GROUP = ["workload", "label", "preset"]
BASELINE_TRANSPORTS = ("tcp", "optireduce")
PAPER_SYSTEM = "dblp"
PAPER_BASELINE = "optireduce"
#: optireduce's mode that adapts its timeout (under a hard cap); "fixed" waits for the cap.
ADAPTIVE_MODE = "adaptive"
#: dblp's ε policy when its phase detector runs (ε_critical in critical phases, else ε_stable).
PHASE_AWARE = "phase-aware"
#: Presets that impair no worker link: excluded from the paper's (bursty-network) ratios.
NON_BURST_PRESETS = ("none", "sham")
#: Published figures of the DBLP paper, both vs OptiReduce (its bounded-time baseline).
PUBLISHED = {"e2e_reduction_mean": 0.244, "e2e_reduction_max": 0.339, "event_ratio_max": 5.88}
DEFAULT_TARGET_FRACTION = 0.95
#: Quantiles of the per-event ratios the events table reports (the paper's "up to" is the max).
EVENT_QUANTILES = {"median": 0.5, "p90": 0.9, "max": 1.0}
#: The per-event statistic's columns, wherever it is shown (events, paper, timeout axis).
EVENT_STATS = ["events", "seeds", *(f"event_ratio_{k}" for k in EVENT_QUANTILES), "calm_ratio"]
#: The exact transports (nothing lost), in the order the ablation takes its reference from.
EXACT_TRANSPORTS = ("reliable", "tcp")
#: The pinned ε whose training time phase-aware dblp is held against: its stable-phase ε.
FAST_EPSILON = 0.2
