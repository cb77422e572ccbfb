"""Prometheus metrics of context assembly (exposed by ops.metrics)."""

from __future__ import annotations

from prometheus_client import Counter, Histogram

FAST_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0)

ASSEMBLY_SECONDS = Histogram(
    "memory_assembly_duration_seconds",
    "Time to answer a context request, by whether the cache answered it.",
    ["cache"],
    buckets=FAST_BUCKETS,
)
CACHE_REQUESTS = Counter(
    "memory_cache_requests", "Context requests looked up in the assembly cache.", ["result"]
)
CACHE_ERRORS = Counter(
    "memory_cache_errors", "Assembly cache operations that failed (the cache was skipped)."
)
SOURCE_SECONDS = Histogram(
    "memory_source_latency_seconds",
    "Time of one source's candidate query.",
    ["source"],
    buckets=FAST_BUCKETS,
)
SOURCE_ERRORS = Counter(
    "memory_source_errors", "Candidate queries that timed out or failed.", ["source"]
)
COHERENCE = Histogram(
    "memory_coherence_score",
    "Share of the given memories' pairs with no open conflict between them, per assembly.",
    buckets=(0.5, 0.7, 0.8, 0.9, 0.95, 0.99, 1.0),
)
