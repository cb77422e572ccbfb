"""Prometheus metrics of the policy jobs (exposed by ops.metrics, with each job's last run
from the database)."""

from __future__ import annotations

from prometheus_client import Counter, Histogram

JOB_RUNS = Counter(
    "memory_policy_job_runs",
    "Policy job runs, by how they ended (complete, partial: stopped at the time budget, failed).",
    ["job", "outcome"],
)
JOB_SECONDS = Histogram(
    "memory_policy_job_duration_seconds",
    "Time of one policy job run.",
    ["job"],
    buckets=(0.1, 0.5, 1, 5, 15, 30, 60, 120, 300),
)
JOB_CHANGED = Counter(
    "memory_policy_job_changed_memories", "Memories a policy job changed.", ["job"]
)
