"""Conversations in the REST API: save one, append to it, read it, list a user's or search
them by words and meaning, and distill one into memories for review (people.conversations,
people.conversation_search, people.distill)."""

from __future__ import annotations

import base64
import binascii
from datetime import datetime
from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import status
from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.reverse import reverse
from rest_framework.views import APIView

from api.access import project_or_404, require_reviewer
from api.auth import actor_for
from api.common import PROJECT_PARAM, WRITE_ERRORS, created_response, errors, valid
from api.serializers.conversations import (
    ConversationCreateIn,
    ConversationDetailOut,
    ConversationPageOut,
    DistilledOut,
    DistillIn,
    MessagesAppendedOut,
    MessagesAppendIn,
    conversation_out,
    message_out,
)
from api.serializers.memories import memory_out
from memories.models import Project
from memories.text import is_whole_number
from people import conversation_search, conversations, distill, users
from people.models import Conversation

CONVERSATION_PARAM = OpenApiParameter("conversation_id", OpenApiTypes.INT, OpenApiParameter.PATH)
USER_PARAM = OpenApiParameter(
    "userId",
    {"type": "string", "maxLength": 200, "pattern": users.ID_PATTERN},
    description="Only this user's conversations.",
)
PAGE, PAGE_MAX = 20, 100
HITS, HITS_MAX = 10, 50


def _whole(request: Request, name: str, low: int, high: int | None, default: int) -> int:
    raw = request.query_params.get(name)
    if raw is None:
        return default
    top = "" if high is None else f" to {high}"
    number = raw[1:] if raw.startswith("-") else raw
    value = int(raw) if is_whole_number(number) and len(number) <= 18 else None
    if value is None or value < low or (high is not None and value > high):
        raise ValidationError({name: [f"Must be a whole number from {low}{top} (got {raw!r})."]})
    return value


def _conversation_or_404(project: Project, conversation_id: int) -> Conversation:
    try:
        return conversations.conversation_get(project=project, conversation_id=conversation_id)
    except Conversation.DoesNotExist:
        raise NotFound(f"No conversation {conversation_id} in project {project.slug}.") from None


def _messages(data: dict[str, Any]) -> list[conversations.NewMessage]:
    return [
        conversations.NewMessage(m["role"], m["content"], m.get("sentAt")) for m in data["messages"]
    ]


class ConversationListCreate(APIView):
    @extend_schema(
        parameters=[
            PROJECT_PARAM,
            USER_PARAM,
            OpenApiParameter(
                "q",
                {"type": "string", "maxLength": conversation_search.QUERY_MAX_CHARS},
                description="Search by words (web-search syntax) and by meaning: the best"
                " conversations, each with its best matching messages.",
            ),
            OpenApiParameter(
                "limit",
                {"type": "integer", "minimum": 1, "maximum": PAGE_MAX},
                description=f"Conversations per page (default {PAGE}); with `q`, hits"
                f" (default {HITS}, at most {HITS_MAX}).",
            ),
            OpenApiParameter(
                "cursor", {"type": "string", "minLength": 1}, description="From `next`."
            ),
        ],
        responses={200: ConversationPageOut, **errors(400)},
        operation_id="projects_conversations_list",
        summary="A user's conversations, the most recent first, or those that match `q`",
    )
    def get(self, request: Request, project: str) -> Response:
        target = project_or_404(request, project)
        params = request.query_params
        unknown = sorted(set(params) - {"userId", "q", "limit", "cursor"})
        if unknown:
            raise ValidationError(
                {
                    name: ["Unknown parameter. Allowed: cursor, limit, q, userId."]
                    for name in unknown
                }
            )
        user_id = params.get("userId")
        if user_id is not None:
            user_id = users.clean_user_ref(user_id)
        q = params.get("q", "").strip()
        if len(q) > conversation_search.QUERY_MAX_CHARS:
            limit = conversation_search.QUERY_MAX_CHARS
            raise ValidationError({"q": [f"At most {limit} characters (got {len(q)})."]})
        if q:
            if "cursor" in params:
                raise ValidationError({"cursor": ["A search has one page: leave it out."]})
            limit = _whole(request, "limit", 1, HITS_MAX, HITS)
            hits = conversation_search.conversations_search(
                project=target, q=q, user_id=user_id, limit=limit
            )
            return Response({"conversations": [_hit_out(hit) for hit in hits], "next": None})
        limit = _whole(request, "limit", 1, PAGE_MAX, PAGE)
        before = _decode(params["cursor"]) if "cursor" in params else None
        found = conversations.conversations_of(
            project=target, user_id=user_id, before=before, limit=limit + 1
        )
        next_url = None
        if len(found) > limit:
            found = found[:limit]
            last = found[-1]
            query = request.query_params.copy()
            query["cursor"] = _encode(last.last_message_at, last.pk)
            next_url = request.build_absolute_uri(f"{request.path}?{query.urlencode()}")
        return Response({"conversations": [conversation_out(c) for c in found], "next": next_url})

    @extend_schema(
        parameters=[PROJECT_PARAM],
        request=ConversationCreateIn,
        responses={201: ConversationDetailOut, **errors(*WRITE_ERRORS)},
        summary="Save a conversation with its messages",
    )
    def post(self, request: Request, project: str) -> Response:
        target = project_or_404(request, project)
        require_reviewer(request, target, "save conversations")
        data = valid(ConversationCreateIn, request.data)
        conversation, messages = conversations.conversation_save(
            project=target,
            user_id=data["userId"],
            agent_id=data["agentId"],
            title=data["title"],
            messages=_messages(data),
        )
        body = {
            **conversation_out(conversation),
            "messages": [message_out(m) for m in messages],
            "nextAfter": None,
        }
        return created_response(
            body, "api:conversation", project=target.slug, conversation_id=conversation.pk
        )


def _hit_out(hit: conversation_search.Hit) -> dict[str, Any]:
    return {
        **conversation_out(hit.conversation),
        "score": hit.score,
        "matches": [
            {
                **message_out(message),
                "score": scored.score,
                "words": scored.words,
                "meaning": scored.meaning,
            }
            for message, scored in hit.messages
        ],
    }


def _encode(at: datetime, pk: int) -> str:
    return base64.urlsafe_b64encode(f"{at.isoformat()}|{pk}".encode()).decode().rstrip("=")


def _decode(cursor: str) -> tuple[datetime, int]:
    try:
        text = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode()
        at, pk = text.split("|")
        moment = datetime.fromisoformat(at)
        if moment.tzinfo is None or not 0 < int(pk) < 2**63:
            raise ValueError(text)
        return moment, int(pk)
    except (ValueError, binascii.Error, UnicodeDecodeError):
        raise ValidationError(
            {"cursor": ["Invalid cursor: use the `next` URL as given."]}
        ) from None


class ConversationDetail(APIView):
    @extend_schema(
        parameters=[
            PROJECT_PARAM,
            CONVERSATION_PARAM,
            OpenApiParameter(
                "after",
                {"type": "integer", "minimum": -1},
                description="Messages after this position (default: from the first).",
            ),
            OpenApiParameter(
                "limit",
                {"type": "integer", "minimum": 1, "maximum": conversations.MESSAGES_PAGE_MAX},
                description=f"Messages at most (default {conversations.MESSAGES_PAGE}).",
            ),
        ],
        responses={200: ConversationDetailOut, **errors(400)},
        summary="A conversation and its messages, in order",
    )
    def get(self, request: Request, project: str, conversation_id: int) -> Response:
        conversation = _conversation_or_404(project_or_404(request, project), conversation_id)
        after = _whole(request, "after", -1, None, -1)
        limit = _whole(
            request, "limit", 1, conversations.MESSAGES_PAGE_MAX, conversations.MESSAGES_PAGE
        )
        messages = conversations.conversation_messages(
            conversation=conversation, after=after, limit=limit + 1
        )
        more = len(messages) > limit
        messages = messages[:limit]
        return Response(
            {
                **conversation_out(conversation),
                "messages": [message_out(m) for m in messages],
                "nextAfter": messages[-1].position if more else None,
            }
        )


class ConversationMessages(APIView):
    @extend_schema(
        parameters=[PROJECT_PARAM, CONVERSATION_PARAM],
        request=MessagesAppendIn,
        responses={201: MessagesAppendedOut, **errors(*WRITE_ERRORS)},
        summary="Append messages to a conversation",
    )
    def post(self, request: Request, project: str, conversation_id: int) -> Response:
        target = project_or_404(request, project)
        require_reviewer(request, target, "append to conversations")
        data = valid(MessagesAppendIn, request.data)
        try:
            conversation, added = conversations.conversation_append(
                project=target, conversation_id=conversation_id, messages=_messages(data)
            )
        except Conversation.DoesNotExist:
            raise NotFound(f"No conversation {conversation_id} in project {target.slug}.") from None
        location = reverse(
            "api:conversation", kwargs={"project": target.slug, "conversation_id": conversation.pk}
        )
        return Response(
            {
                "conversation": conversation_out(conversation),
                "messages": [message_out(m) for m in added],
            },
            status=status.HTTP_201_CREATED,
            headers={"Location": location},
        )


class ConversationDistill(APIView):
    @extend_schema(
        parameters=[PROJECT_PARAM, CONVERSATION_PARAM],
        request=DistillIn,
        responses={201: DistilledOut, **errors(*WRITE_ERRORS)},
        summary="Propose what a conversation taught as memories, pending review",
    )
    def post(self, request: Request, project: str, conversation_id: int) -> Response:
        target = project_or_404(request, project)
        conversation = _conversation_or_404(target, conversation_id)
        require_reviewer(request, target, "distill conversations")
        data = valid(DistillIn, request.data or {})
        result = distill.conversation_distill(
            project=target,
            conversation=conversation,
            actor=actor_for(request),
            learnings=data.get("learnings"),
        )
        return Response(
            {"memories": [memory_out(m) for m in result.memories], "known": result.known},
            status=status.HTTP_201_CREATED,
        )
