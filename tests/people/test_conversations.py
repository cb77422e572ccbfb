"""Conversations: saved, appended to, read back, with their messages checked, scanned for
secrets and embedded at write time."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import numpy as np
import pytest
from django.core.exceptions import ValidationError

from knowledge import embeddings
from memories.models import MemoryPolicy
from people import conversations
from people.conversations import NewMessage
from people.models import Conversation, Message

pytestmark = pytest.mark.django_db

T0 = datetime(2031, 3, 1, 12, 0, tzinfo=UTC)


def save(project, *texts: str, user: str = "ana", **options):
    return conversations.conversation_save(
        project=project,
        user_id=user,
        agent_id=options.pop("agent", "helper-1"),
        messages=[
            NewMessage("user" if i % 2 == 0 else "assistant", t) for i, t in enumerate(texts)
        ],
        **options,
    )


def test_a_saved_conversation_keeps_its_messages_in_order_with_dense_positions(project):
    conversation, messages = save(project, "Hello", "Hi, how can I help?", "Fix the login", now=T0)
    assert [(m.position, m.role, m.content) for m in messages] == [
        (0, "user", "Hello"),
        (1, "assistant", "Hi, how can I help?"),
        (2, "user", "Fix the login"),
    ]
    assert conversation.message_count == 3
    assert conversation.last_message_at == T0
    assert {m.sent_at for m in messages} == {T0}  # times default to now
    read = conversations.conversation_messages(conversation=conversation)
    assert [m.content for m in read] == ["Hello", "Hi, how can I help?", "Fix the login"]


def test_appends_continue_the_positions_and_move_the_last_message_time(project):
    conversation, _ = save(project, "one", now=T0)
    later = T0 + timedelta(hours=1)
    earlier = T0 - timedelta(hours=1)
    conversation, added = conversations.conversation_append(
        project=project,
        conversation_id=conversation.pk,
        messages=[NewMessage("assistant", "two", later), NewMessage("user", "three", earlier)],
    )
    assert [(m.position, m.content) for m in added] == [(1, "two"), (2, "three")]
    stored = Conversation.objects.get(pk=conversation.pk)
    assert stored.message_count == 3
    assert stored.last_message_at == later  # the latest time, whatever the order given
    page = conversations.conversation_messages(conversation=stored, after=0, limit=1)
    assert [m.content for m in page] == ["two"]


def test_another_projects_conversation_cannot_be_appended_to_or_read(project, other_project):
    conversation, _ = save(project, "mine")
    with pytest.raises(Conversation.DoesNotExist):
        conversations.conversation_append(
            project=other_project,
            conversation_id=conversation.pk,
            messages=[NewMessage("user", "theirs")],
        )
    with pytest.raises(Conversation.DoesNotExist):
        conversations.conversation_get(project=other_project, conversation_id=conversation.pk)
    assert Message.objects.filter(conversation=conversation).count() == 1


@pytest.mark.parametrize(
    ("change", "field", "says"),
    [
        ({"user": "ana smith"}, "userId", "letters, digits"),
        ({"user": "x" * 201}, "userId", "At most 200"),
        ({"agent": ""}, "agentId", "non-empty"),
        ({"agent": "-lead"}, "agentId", "starting with a letter or digit"),
        ({"title": "t" * 201}, "title", "At most 200"),
    ],
)
def test_ids_and_titles_are_checked(project, change, field, says):
    with pytest.raises(ValidationError) as refused:
        save(project, "hello", **change)
    assert says in str(refused.value.message_dict[field])


@pytest.mark.parametrize(
    ("message", "field", "says"),
    [
        (NewMessage("robot", "hi"), "messages[0].role", "not one of"),
        (NewMessage("user", " \n\u200b "), "messages[0].content", "Must not be empty"),
        (NewMessage("user", "x" * 8001), "messages[0].content", "the limit is 8000"),
    ],
)
def test_each_message_is_checked_and_named(project, message, field, says):
    with pytest.raises(ValidationError) as refused:
        conversations.conversation_save(
            project=project, user_id="ana", agent_id="a", messages=[message]
        )
    assert says in str(refused.value.message_dict[field])
    assert not Conversation.objects.exists()


def test_a_request_holds_one_to_a_hundred_messages(project):
    for count, says in ((0, "at least one"), (101, "At most 100")):
        with pytest.raises(ValidationError) as refused:
            conversations.conversation_save(
                project=project,
                user_id="ana",
                agent_id="a",
                messages=[NewMessage("user", "hi")] * count,
            )
        assert says in str(refused.value.message_dict["messages"])


SECRET = "My key is ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"


def test_a_secret_in_a_message_is_refused_under_the_reject_policy(project):
    with pytest.raises(ValidationError) as refused:
        save(project, "hello", SECRET)
    assert "GitHub Token" in str(refused.value.message_dict["messages[1].content"])
    assert not Message.objects.exists()


def test_a_secret_in_a_message_is_redacted_under_the_redact_policy(project):
    MemoryPolicy.objects.filter(project=project).update(secrets="redact")
    project.refresh_from_db()
    _, messages = save(project, SECRET)
    assert messages[0].content == "My key is [REDACTED GitHub Token]"
    assert "ghp_" not in Message.objects.get().content


def test_messages_are_embedded_at_write_time_with_the_configured_model(project):
    _, messages = save(project, "The deploy failed because the migration timed out")
    stored = Message.objects.get(pk=messages[0].pk)
    embedder = embeddings.configured()
    assert embedder is not None
    assert stored.embedding_model == embedder.name
    assert stored.vector is not None
    assert abs(float(np.linalg.norm(np.array(stored.vector))) - 1.0) < 1e-4


def test_without_an_embedding_model_messages_are_kept_without_meaning(project, settings):
    settings.MEMORY_EMBEDDINGS = "off"
    _, messages = save(project, "no meaning here")
    stored = Message.objects.get(pk=messages[0].pk)
    assert (stored.embedding_model, stored.vector) == ("", None)


def test_a_users_conversations_walk_newest_first_by_keyset(project, other_project):
    made = [save(project, f"chat {i}", now=T0 + timedelta(minutes=i))[0] for i in range(5)]
    save(project, "someone else's", user="bo", now=T0 + timedelta(hours=1))
    save(other_project, "another project's", now=T0 + timedelta(hours=2))
    first = conversations.conversations_of(project=project, user_id="ana", limit=2)
    assert [c.pk for c in first] == [made[4].pk, made[3].pk]
    last = first[-1]
    rest = conversations.conversations_of(
        project=project, user_id="ana", before=(last.last_message_at, last.pk), limit=10
    )
    assert [c.pk for c in rest] == [made[2].pk, made[1].pk, made[0].pk]
