"""Prometheus metrics of the service.

With ``PROMETHEUS_MULTIPROC_DIR`` set (the gunicorn config and ``manage.py serve`` set it)
every process (web workers, Celery workers) writes its samples to files there and a scrape
adds them up, so counters are right whatever process served a request; without it a process
reports its own. Gauges are computed at scrape time from the counters or the database, so
none needs a per-process mode.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

from prometheus_client import (
    REGISTRY,
    CollectorRegistry,
    Counter,
    Histogram,
    generate_latest,
    multiprocess,
)
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

# Every layer's metrics are registered once this module is imported, so a scrape of any
# process lists them all.
import knowledge.metrics  # noqa: F401
import policies.metrics  # noqa: F401
from assembly.metrics import FAST_BUCKETS

HTTP_REQUESTS = Counter(
    "http_requests", "Requests answered, by endpoint and status.", ["method", "endpoint", "status"]
)
HTTP_SECONDS = Histogram(
    "http_request_duration_seconds",
    "Time to answer a request, by endpoint.",
    ["method", "endpoint"],
    buckets=FAST_BUCKETS,
)


def multiprocess_dir() -> str | None:
    return os.environ.get("PROMETHEUS_MULTIPROC_DIR") or None


def _source_registry() -> CollectorRegistry:
    if multiprocess_dir():
        registry = CollectorRegistry()
        multiprocess.MultiProcessCollector(registry)
        return registry
    return REGISTRY


class _Derived(Collector):
    """The cache hit ratio from the counters, and each policy job's last run from the
    database (which also covers workers on other machines)."""

    def __init__(self, source: CollectorRegistry) -> None:
        self.source = source

    def collect(self) -> Iterator[GaugeMetricFamily]:
        hits = misses = 0.0
        for family in self.source.collect():
            if family.name != "memory_cache_requests":
                continue
            for sample in family.samples:
                if sample.name.endswith("_total"):
                    if sample.labels.get("result") == "hit":
                        hits += sample.value
                    else:
                        misses += sample.value
        ratio = GaugeMetricFamily(
            "memory_cache_hit_ratio",
            "Share of context requests the assembly cache answered since the server started.",
        )
        ratio.add_metric([], hits / (hits + misses) if hits + misses else 0.0)
        yield ratio
        yield from _job_states()
        yield from _replica_states()


def _job_states() -> Iterator[GaugeMetricFamily]:
    from policies.models import JobState

    finished = GaugeMetricFamily(
        "memory_policy_job_last_finished_timestamp_seconds",
        "When each policy job (or part) last finished, as a Unix time.",
        labels=["job"],
    )
    changed = GaugeMetricFamily(
        "memory_policy_job_last_changed_memories",
        "Memories each policy job (or part) changed in its last run.",
        labels=["job"],
    )
    for name, at, count in JobState.objects.values_list("name", "last_finished_at", "last_changed"):
        if at is not None:
            finished.add_metric([name], at.timestamp())
            changed.add_metric([name], count)
    yield finished
    yield changed


def _replica_states() -> Iterator[GaugeMetricFamily]:
    """Each read replica, asked at scrape time (memories.replicas): up, and how far behind."""
    from memories import replicas

    up = GaugeMetricFamily(
        "database_replica_up", "Whether each read replica answered.", labels=["replica"]
    )
    seconds = GaugeMetricFamily(
        "database_replica_lag_seconds",
        "Seconds of the primary's commits each replica has received but not yet replayed.",
        labels=["replica"],
    )
    size = GaugeMetricFamily(
        "database_replica_lag_bytes",
        "Bytes of WAL between the primary's position and what each replica has replayed.",
        labels=["replica"],
    )
    for alias, answered, lag, behind in replicas.positions():
        up.add_metric([alias], 1.0 if answered else 0.0)
        if lag is not None and behind is not None:
            seconds.add_metric([alias], lag)
            size.add_metric([alias], behind)
    yield up
    yield seconds
    yield size


def exposition() -> bytes:
    """Every metric in the Prometheus text format."""
    source = _source_registry()
    derived = CollectorRegistry(auto_describe=False)
    derived.register(_Derived(source))
    return generate_latest(source) + generate_latest(derived)
