"""Retention: messages older than their project's retention are deleted in set-based batches,
then the conversations left with none; a second run finds nothing to do."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from django.db import connection

from memories.models import MemoryPolicy
from people import conversations
from people.conversations import NewMessage
from people.models import Conversation, Message

pytestmark = pytest.mark.django_db

NOW = datetime(2031, 6, 1, tzinfo=UTC)


def chat(project, *ages_in_days: float, user: str = "ana") -> Conversation:
    conversation, _ = conversations.conversation_save(
        project=project,
        user_id=user,
        agent_id="a",
        messages=[
            NewMessage("user", f"said {age} days ago", NOW - timedelta(days=age))
            for age in ages_in_days
        ],
    )
    return conversation


def test_old_messages_go_then_empty_conversations_and_a_second_run_does_nothing(
    project, other_project
):
    MemoryPolicy.objects.filter(project=other_project).update(conversation_retention_days=7)
    old = chat(project, 40, 35)  # past the default 30 days: goes whole
    mixed = chat(project, 45, 31, 2)  # keeps its last message
    recent = chat(project, 10)
    short = chat(other_project, 10, 3)  # past that project's 7 days: loses one

    pruned = conversations.conversations_prune(now=NOW, batch_size=2)

    assert (pruned.messages, pruned.conversations, pruned.finished) == (5, 1, True)
    assert pruned.batches >= 5  # batches of two per project, then the conversations
    assert not Conversation.objects.filter(pk=old.pk).exists()
    left = {
        c.pk: (c.message_count, [m.content for m in c.messages.order_by("position")])
        for c in Conversation.objects.all()
    }
    assert left == {
        mixed.pk: (1, ["said 2 days ago"]),
        recent.pk: (1, ["said 10 days ago"]),
        short.pk: (1, ["said 3 days ago"]),
    }
    again = conversations.conversations_prune(now=NOW, batch_size=2)
    assert (again.messages, again.conversations) == (0, 0)


def test_a_pruned_conversation_appends_after_its_last_position(project):
    mixed = chat(project, 45, 2)
    conversations.conversations_prune(now=NOW)
    _, added = conversations.conversation_append(
        project=project, conversation_id=mixed.pk, messages=[NewMessage("user", "more")]
    )
    assert added[0].position == 2


def test_a_second_prune_at_once_finds_the_first_running_and_returns(project):
    chat(project, 40)
    with connection.cursor() as cursor:
        # Another session's prune holds the lock (taken here on a second connection).
        from django.db import connections

        other = connections.create_connection("default")
        try:
            with other.cursor() as held:
                held.execute("BEGIN")
                held.execute("SELECT pg_advisory_xact_lock(%s)", [conversations.PRUNE_LOCK])
                busy = conversations.conversations_prune(now=NOW)
                held.execute("ROLLBACK")
        finally:
            other.close()
        cursor.execute("SELECT 1")
    assert (busy.busy, busy.finished, busy.messages) == (True, False, 0)
    assert Message.objects.count() == 1


def test_a_prune_stops_between_batches_at_its_deadline(project):
    chat(project, 40, 41, 42)
    ticks = iter([0.0, 0.0, 10.0])
    pruned = conversations.conversations_prune(
        now=NOW, batch_size=1, deadline=5.0, clock=lambda: next(ticks)
    )
    assert (pruned.messages, pruned.finished) == (2, False)
    assert conversations.conversations_prune(now=NOW).messages == 1


def test_each_batch_reads_messages_through_the_index_on_project_and_time(project):
    chat(project, 40)
    with connection.cursor() as cursor:
        cursor.execute("SET enable_seqscan = off")  # the plan the index allows, at any size
        cursor.execute(
            "EXPLAIN " + conversations._PRUNE_MESSAGES,
            {"project": project.pk, "since": NOW - timedelta(days=99), "before": NOW, "batch": 9},
        )
        plan = "\n".join(row[0] for row in cursor.fetchall())
        cursor.execute("RESET enable_seqscan")
    assert "message_age_idx" in plan
    assert "Seq Scan" not in plan
