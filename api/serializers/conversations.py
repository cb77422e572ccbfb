"""Conversations: saved, appended to, read, listed or searched, and distilled into memories."""

from __future__ import annotations

from typing import Any

from django.core.validators import RegexValidator
from drf_spectacular.utils import extend_schema_serializer
from rest_framework import serializers

from api.fields import (
    StrictCharField,
    StrictChoiceField,
    StrictDateTimeField,
    StrictInput,
    content_field,
)
from api.serializers.memories import MemoryOut
from people import conversations, users
from people.distill import LEARNINGS_MAX
from people.models import USER_REF_MAX, Conversation, Message, Role


def id_field(max_length: int, what: str) -> StrictCharField:
    return StrictCharField(
        max_length=max_length,
        validators=[RegexValidator(users.ID_PATTERN, message=f"Use {users.ID_RULE}.")],
        help_text=what,
    )


class MessageIn(StrictInput):
    role = StrictChoiceField(choices=Role.choices)
    content = StrictCharField(
        max_length=conversations.MESSAGE_MAX_CHARS, trim_whitespace=False, visible=True
    )
    sentAt = StrictDateTimeField(required=False, help_text="When it was said; default: now.")


def _messages_field() -> serializers.ListField:
    return serializers.ListField(
        child=MessageIn(),
        min_length=1,
        max_length=conversations.MESSAGES_PER_REQUEST,
        help_text=f"1 to {conversations.MESSAGES_PER_REQUEST} messages, in the order they"
        " were said.",
    )


class ConversationCreateIn(StrictInput):
    agentId = id_field(conversations.AGENT_ID_MAX, "The agent that had the conversation.")
    userId = id_field(USER_REF_MAX, "The user, as the calling system names them.")
    title = StrictCharField(
        max_length=conversations.TITLE_MAX_CHARS, required=False, default="", allow_blank=True
    )
    messages = _messages_field()


class MessagesAppendIn(StrictInput):
    messages = _messages_field()


class DistillIn(StrictInput):
    learnings = serializers.ListField(
        child=content_field(),
        min_length=1,
        max_length=LEARNINGS_MAX,
        required=False,
        help_text="What to propose, one statement each. Left out: the user's sentences that"
        " read as lasting instructions or facts.",
    )


@extend_schema_serializer(component_name="ConversationMessage")
class MessageOut(serializers.Serializer):
    position = serializers.IntegerField(help_text="0 for the first message, then 1, 2 ...")
    role = serializers.ChoiceField(choices=Role.choices)
    content = serializers.CharField()
    sentAt = serializers.DateTimeField()


@extend_schema_serializer(component_name="Conversation")
class ConversationOut(serializers.Serializer):
    id = serializers.IntegerField()
    projectId = serializers.IntegerField()
    userId = serializers.CharField()
    agentId = serializers.CharField()
    title = serializers.CharField()
    createdAt = serializers.DateTimeField()
    lastMessageAt = serializers.DateTimeField()
    messageCount = serializers.IntegerField(help_text="The messages it holds now.")


@extend_schema_serializer(component_name="ConversationDetail")
class ConversationDetailOut(ConversationOut):
    messages = MessageOut(many=True, help_text="In order, from the first asked for.")
    nextAfter = serializers.IntegerField(
        allow_null=True,
        help_text="More messages follow: pass this as `after` for them (null: none).",
    )


class MessagesAppendedOut(serializers.Serializer):
    conversation = ConversationOut()
    messages = MessageOut(many=True, help_text="The messages appended, at their positions.")


@extend_schema_serializer(component_name="ConversationMatch")
class MatchOut(MessageOut):
    score = serializers.FloatField(help_text="The mean of `words` and `meaning`.")
    words = serializers.FloatField(help_text="Full-text rank, 1 for the best match.")
    meaning = serializers.FloatField(help_text="Cosine with the query's embedding (0 below 0.3).")


@extend_schema_serializer(component_name="ConversationFound")
class ConversationFoundOut(ConversationOut):
    score = serializers.FloatField(required=False, help_text="With `q`: its best message's.")
    matches = MatchOut(many=True, required=False, help_text="With `q`: its best matching messages.")


class ConversationPageOut(serializers.Serializer):
    conversations = ConversationFoundOut(many=True)
    next = serializers.URLField(allow_null=True, help_text="The next page (listing only).")


class DistilledOut(serializers.Serializer):
    memories = MemoryOut(many=True, help_text="Proposed: pending review, inactive.")
    known = serializers.ListField(
        child=serializers.CharField(),
        help_text="Texts the project already has as a memory: not proposed again.",
    )


def message_out(message: Message) -> dict[str, Any]:
    return {
        "position": message.position,
        "role": message.role,
        "content": message.content,
        "sentAt": message.sent_at,
    }


def conversation_out(conversation: Conversation) -> dict[str, Any]:
    return {
        "id": conversation.pk,
        "projectId": conversation.project_id,
        "userId": conversation.user_ref,
        "agentId": conversation.agent_id,
        "title": conversation.title,
        "createdAt": conversation.created_at,
        "lastMessageAt": conversation.last_message_at,
        "messageCount": conversation.message_count,
    }
