"""Uses of memories: written at once, or noted in a real Redis and written by a flush."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import DatabaseError
from django.utils import timezone

from memories.services import uses
from policies.tasks import flush_memory_uses
from tests.api.conftest import client_with_key, url

pytestmark = pytest.mark.django_db


def counted(memory):
    memory.refresh_from_db()
    return memory.access_count, memory.last_accessed_at


def test_without_a_buffer_a_use_is_written_at_once(make_memory):
    memory = make_memory()
    now = timezone.now()
    uses.record([memory.pk, memory.pk], now)
    assert counted(memory) == (1, now)
    assert uses.flush() == 0


def test_noted_uses_reach_the_database_at_the_flush_summed_with_the_last_time(
    make_memory, buffered
):
    first, second = make_memory(), make_memory()
    earlier = timezone.now() - timedelta(minutes=5)
    later = timezone.now()
    uses.record([first.pk, second.pk], earlier)
    uses.record([first.pk], later)
    assert counted(first) == (0, None)  # only noted so far
    assert uses.flush() == 2
    assert counted(first) == (2, later)
    assert counted(second) == (1, earlier)
    assert uses.flush() == 0  # taken: a second flush writes nothing twice
    assert counted(first) == (2, later)


def test_a_flush_never_moves_the_last_use_back(make_memory, buffered):
    memory = make_memory()
    now = timezone.now()
    uses.write([memory.pk], now)
    uses.record([memory.pk], now - timedelta(hours=1))  # noted late, by a slow worker
    uses.flush()
    assert counted(memory) == (2, now)


def test_a_failed_write_puts_the_uses_back_for_the_next_flush(make_memory, buffered, monkeypatch):
    memory = make_memory()
    now = timezone.now()
    uses.record([memory.pk], now)
    real_write = uses._write

    def database_down(*args):
        raise DatabaseError("the database is restarting")

    monkeypatch.setattr(uses, "_write", database_down)
    with pytest.raises(DatabaseError):
        uses.flush()
    uses.record([memory.pk], now - timedelta(seconds=1))  # noted meanwhile: older, not kept
    monkeypatch.setattr(uses, "_write", real_write)
    assert uses.flush() == 1
    assert counted(memory) == (2, now)


def test_an_unreachable_buffer_writes_the_use_at_once(make_memory, settings):
    settings.MEMORY_USES_URL = "redis://127.0.0.1:9/0"  # nothing listens there
    memory = make_memory()
    uses.record([memory.pk])
    assert counted(memory)[0] == 1


def test_a_context_request_notes_its_uses_and_the_beat_task_writes_them(
    project, make_memory, buffered
):
    memory = make_memory(project=project)
    response = client_with_key(project).post(
        url(project, "context"), {"tokenBudget": 500}, format="json"
    )
    assert [item["id"] for item in response.json()["items"]] == [memory.pk]
    assert counted(memory)[0] == 0
    assert flush_memory_uses() == 1
    assert counted(memory)[0] == 1
