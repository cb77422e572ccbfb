"""Appends at once to one conversation, on real, separate PostgreSQL connections: each waits
its turn on the conversation's row, and no message is lost or shares a position."""

from __future__ import annotations

import pytest
from django.db import transaction

from people import conversations
from people.conversations import NewMessage
from people.models import Conversation, Message
from tests.concurrency import Call, wait_until, waiting_on_locks

pytestmark = pytest.mark.django_db(transaction=True)


def test_appends_at_once_lose_no_message_and_keep_positions_dense(project):
    conversation, _ = conversations.conversation_save(
        project=project, user_id="ana", agent_id="a", messages=[NewMessage("user", "start")]
    )

    def append(writer: int):
        return lambda: conversations.conversation_append(
            project=project,
            conversation_id=conversation.pk,
            messages=[NewMessage("user", f"writer {writer} message {i}") for i in range(3)],
        )

    writers = 4
    with transaction.atomic():
        # Hold the conversation's row until every writer waits on it, then let them go.
        Conversation.objects.select_for_update().get(pk=conversation.pk)
        running = [Call(append(writer)) for writer in range(writers)]
        wait_until(
            lambda: waiting_on_locks() >= writers or any(c.done for c in running),
            "the appends reach the conversation's lock",
        )
        assert not any(c.done for c in running), [c.error for c in running]
    for call in running:
        call.join()

    stored = list(Message.objects.filter(conversation=conversation).order_by("position"))
    assert [m.position for m in stored] == list(range(1 + writers * 3))
    assert len({m.content for m in stored}) == 1 + writers * 3
    # Each append's messages stay together and in their order.
    for writer in range(writers):
        places = [m.position for m in stored if m.content.startswith(f"writer {writer} ")]
        assert places == list(range(places[0], places[0] + 3))
    assert Conversation.objects.get(pk=conversation.pk).message_count == 1 + writers * 3
