from __future__ import annotations

import threading
from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from memories.models import Memory, MemoryEvent


@pytest.fixture
def age():
    """Set when memories were created and last given to an agent, ``days`` ago."""

    def age(memories, *, created=0, accessed=None, **fields):
        now = timezone.now()
        Memory.objects.filter(pk__in=[m.pk for m in memories]).update(
            created_at=now - timedelta(days=created),
            last_accessed_at=None if accessed is None else now - timedelta(days=accessed),
            **fields,
        )
        return memories

    return age


@pytest.fixture
def state():
    """Everything a job may change, and the history it wrote: equal states, same end."""

    def state():
        memories = sorted(
            Memory.objects.values_list(
                "id", "active", "confidence", "tier", "content", "tags", "access_count",
                "archived_at", "merged_into", "stale_ref",
            )
        )  # fmt: skip
        events = sorted(MemoryEvent.objects.values_list("memory_id", "action", "reason"))
        return memories, events

    return state


@pytest.fixture
def two_at_once():
    """Run ``job`` in two threads (two database connections) started together."""

    def run(job):
        barrier = threading.Barrier(2)
        results, errors = [], []

        def worker():
            try:
                barrier.wait()
                results.append(job())
            except Exception as error:
                errors.append(error)
            finally:
                connection.close()

        threads = [threading.Thread(target=worker) for _ in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert errors == []
        return results

    return run
