"""Prometheus metrics of the store (exposed by ops.metrics)."""

from __future__ import annotations

from prometheus_client import Counter

PAIRS = Counter(
    "memory_conflicts",
    "Pairs of memories found to repeat or possibly contradict each other (event found), and"
    " pairs decided (event resolved), by kind.",
    ["kind", "event"],
)

LOCK_RETRIES = Counter(
    "memory_lock_retries",
    "Writes that PostgreSQL rolled back for a deadlock or a serialization failure and that"
    " were run once more (memories.locks); by reason. Writers lock in one order, so this"
    " stays at zero.",
    ["reason"],
)
