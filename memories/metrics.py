"""Prometheus metrics of the store (exposed by ops.metrics)."""

from __future__ import annotations

from prometheus_client import Counter

PAIRS = Counter(
    "memory_conflicts",
    "Pairs of memories found to repeat or possibly contradict each other (event found), and"
    " pairs decided (event resolved), by kind.",
    ["kind", "event"],
)
