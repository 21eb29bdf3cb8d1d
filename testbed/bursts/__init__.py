"""Bursts: presets, the seeded schedule, the impairment mechanisms and the scheduler that plays
them on a live network. Imports `base` and `network`."""
