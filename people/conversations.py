"""Conversations: saved with their messages, appended to, read back, and pruned when they pass
their project's retention (DESIGN.md 6f). Searching them is people.conversation_search;
turning one into memories for review is people.distill.

Every message is cleaned and scanned for secrets as a memory's content is (the project's
secrets policy refuses or redacts them), and embedded at write time by the configured model
(knowledge.embeddings) so that a search can find it by meaning; a model that cannot answer
never fails a write (the message is kept without its vector).

A conversation's messages have dense positions in the order they were sent to the service:
an append locks the conversation's row, so two appends at once each get their own positions
and neither loses a message.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from django.core.exceptions import ValidationError
from django.db import connection, transaction
from django.utils import timezone

from knowledge import embeddings
from memories.folding import visible
from memories.models import MemoryPolicy, Project
from memories.secrets import scrub
from memories.services.validation import secrets_mode
from memories.text import strip_control_characters, to_utc
from people.models import Conversation, Message, Role
from people.users import clean_user_ref, identifier

# What one request may send: a message's length (characters) and how many messages.
MESSAGE_MAX_CHARS = 8000
MESSAGES_PER_REQUEST = 100
TITLE_MAX_CHARS = 200
AGENT_ID_MAX = 200
# A remote embedding model gets this long before a message is kept without its meaning.
EMBED_SECONDS = 2.0


@dataclass(frozen=True)
class NewMessage:
    role: str
    content: str
    sent_at: datetime | None = None


def _message(given: NewMessage | Mapping[str, Any], index: int, now: datetime) -> NewMessage:
    if isinstance(given, Mapping):
        given = NewMessage(given.get("role", ""), given.get("content", ""), given.get("sent_at"))
    where = f"messages[{index}]"
    if given.role not in Role.values:
        allowed = ", ".join(Role.values)
        raise ValidationError({f"{where}.role": f"{given.role!r} is not one of: {allowed}."})
    if not isinstance(given.content, str):
        raise ValidationError({f"{where}.content": "Must be a string."})
    content = strip_control_characters(given.content).strip()
    if not visible(content).strip():
        raise ValidationError({f"{where}.content": "Must not be empty."})
    if len(content) > MESSAGE_MAX_CHARS:
        raise ValidationError(
            {
                f"{where}.content": f"{len(content)} characters long; the limit is"
                f" {MESSAGE_MAX_CHARS}: split it into several messages."
            }
        )
    sent_at = now if given.sent_at is None else to_utc(given.sent_at, f"{where}.sentAt")
    return NewMessage(given.role, content, sent_at)


def _messages(
    project: Project, given: Sequence[NewMessage | Mapping[str, Any]], now: datetime
) -> list[NewMessage]:
    """The messages cleaned, checked and with their secrets refused or redacted as the
    project's policy says; a ValidationError names each message to fix."""
    if not given:
        raise ValidationError({"messages": "Send at least one message."})
    if len(given) > MESSAGES_PER_REQUEST:
        raise ValidationError(
            {
                "messages": f"At most {MESSAGES_PER_REQUEST} messages a request (got"
                f" {len(given)}): send the rest in further appends."
            }
        )
    cleaned = [_message(message, index, now) for index, message in enumerate(given)]
    scrubbed = scrub(
        {f"messages[{i}].content": m.content for i, m in enumerate(cleaned)},
        secrets_mode(project),
    ).values
    return [
        NewMessage(m.role, str(scrubbed[f"messages[{i}].content"]), m.sent_at)
        for i, m in enumerate(cleaned)
    ]


def _meanings(texts: Sequence[str]) -> tuple[str, list[list[float] | None]]:
    """Each text's unit vector by the configured model and the model's name; no vectors when
    semantic search is off or the model cannot answer now."""
    embedder = embeddings.configured()
    if embedder is None or not texts:
        return "", [None] * len(texts)
    try:
        found = embedder.embed([embeddings.memory_text(t) for t in texts], timeout=EMBED_SECONDS)
    except embeddings.EmbeddingUnavailable:
        return "", [None] * len(texts)
    return embedder.name, [[float(x) for x in row] for row in found.tolist()]


def _insert(conversation: Conversation, messages: list[NewMessage], first: int) -> list[Message]:
    model, vectors = _meanings([m.content for m in messages])
    rows = [
        Message(
            conversation=conversation,
            project_id=conversation.project_id,
            position=first + offset,
            role=m.role,
            content=m.content,
            sent_at=m.sent_at or timezone.now(),
            embedding_model=model if vector is not None else "",
            vector=vector,
        )
        for offset, (m, vector) in enumerate(zip(messages, vectors, strict=True))
    ]
    Message.objects.bulk_create(rows)
    return rows


def _latest(messages: Sequence[NewMessage]) -> datetime:
    return max(m.sent_at for m in messages if m.sent_at is not None)


@transaction.atomic
def conversation_save(
    *,
    project: Project,
    user_id: str,
    agent_id: str,
    messages: Sequence[NewMessage | Mapping[str, Any]],
    title: str = "",
    now: datetime | None = None,
) -> tuple[Conversation, list[Message]]:
    """A new conversation of ``agent_id`` with ``user_id`` and its first messages, at
    positions 0, 1, ... in the order given (a message's time defaults to now)."""
    now = now or timezone.now()
    user_ref = clean_user_ref(user_id)
    agent = identifier(agent_id, "agentId", AGENT_ID_MAX)
    if not isinstance(title, str):
        raise ValidationError({"title": "Must be a string."})
    title = strip_control_characters(title).strip()
    if len(title) > TITLE_MAX_CHARS:
        raise ValidationError({"title": f"At most {TITLE_MAX_CHARS} characters."})
    mode = secrets_mode(project)
    title = str(scrub({"title": title}, mode).values["title"]) if title else ""
    cleaned = _messages(project, messages, now)
    conversation = Conversation.objects.create(
        project=project,
        user_ref=user_ref,
        agent_id=agent,
        title=title,
        last_message_at=_latest(cleaned),
        message_count=len(cleaned),
    )
    return conversation, _insert(conversation, cleaned, 0)


_NEXT_POSITION = f"""
    SELECT coalesce(max(position) + 1, 0) FROM {Message._meta.db_table}
    WHERE conversation_id = %s"""


@transaction.atomic
def conversation_append(
    *,
    project: Project,
    conversation_id: int,
    messages: Sequence[NewMessage | Mapping[str, Any]],
    now: datetime | None = None,
) -> tuple[Conversation, list[Message]]:
    """Add messages after the conversation's last one. The conversation's row is locked
    first, so appends at once take their turns: positions stay dense and in order, and no
    message is lost. Raises Conversation.DoesNotExist for one not in ``project``."""
    now = now or timezone.now()
    cleaned = _messages(project, messages, now)  # before the lock: the scan takes time
    conversation = (
        Conversation.objects.select_for_update(no_key=True)
        .filter(project=project, pk=conversation_id)
        .get()
    )
    with connection.cursor() as cursor:
        cursor.execute(_NEXT_POSITION, [conversation.pk])
        first = cursor.fetchone()[0]
    added = _insert(conversation, cleaned, first)
    conversation.message_count += len(added)
    conversation.last_message_at = max(conversation.last_message_at, _latest(cleaned))
    conversation.save(update_fields=["message_count", "last_message_at"])
    return conversation, added


# --- reading --------------------------------------------------------------------------------

MESSAGES_PAGE = 200
MESSAGES_PAGE_MAX = 1000


def conversation_get(*, project: Project, conversation_id: int) -> Conversation:
    """One conversation of the project; Conversation.DoesNotExist otherwise."""
    return Conversation.objects.get(project=project, pk=conversation_id)


def conversation_messages(
    *, conversation: Conversation, after: int = -1, limit: int = MESSAGES_PAGE
) -> list[Message]:
    """The conversation's messages in order, from the one after position ``after``, at most
    ``limit`` (through the unique index on conversation and position)."""
    return list(
        Message.objects.filter(conversation=conversation, position__gt=after)
        .order_by("position")
        .defer("search_vector", "vector")[:limit]
    )


def conversations_of(
    *,
    project: Project,
    user_id: str | None,
    before: tuple[datetime, int] | None = None,
    limit: int = 50,
) -> list[Conversation]:
    """A user's conversations (or the project's), the most recently active first, walked by
    (last message time, id) after ``before``: each page reads about ``limit`` index entries."""
    found = Conversation.objects.filter(project=project)
    if user_id is not None:
        found = found.filter(user_ref=user_id)
    if before is not None:
        at, pk = before
        found = found.filter(last_message_at__lte=at).exclude(last_message_at=at, pk__gte=pk)
    return list(found.order_by("-last_message_at", "-id")[:limit])


# --- retention --------------------------------------------------------------------------------

PRUNE_BATCH = 20_000
MESSAGES = Message._meta.db_table
CONVERSATIONS = Conversation._meta.db_table
POLICIES = MemoryPolicy._meta.db_table
PROJECTS = Project._meta.db_table
RETENTION_DEFAULT = MemoryPolicy._meta.get_field("conversation_retention_days").get_default()
# One prune at a time (a second finds the lock held and returns): the counts of the
# conversations are then updated by one writer, in no order that could deadlock another.
PRUNE_LOCK = 0x636F6E76  # "conv"

# The projects with messages past their retention, and each one's cut-off (one index probe
# a project).
_DUE = f"""
SELECT c.project_id, c.before FROM (
    SELECT pr.id AS project_id, %(now)s - make_interval(days =>
        coalesce(p.conversation_retention_days, %(default_days)s)) AS before
    FROM {PROJECTS} pr LEFT JOIN {POLICIES} p ON p.project_id = pr.id
) c
WHERE EXISTS (
    SELECT 1 FROM {MESSAGES} m WHERE m.project_id = c.project_id AND m.sent_at < c.before)
ORDER BY c.project_id"""
# One batch of one project: its oldest ``batch`` messages past the cut-off, read through the
# index on project and time from where the last batch ended (so no batch reads the entries
# its predecessors deleted), rows a writer holds skipped; deleted by id, with their
# conversations' counts lowered, in one statement. Answers how many went and the time of
# the last.
_PRUNE_MESSAGES = f"""
WITH doomed AS (
    SELECT m.id FROM {MESSAGES} m
    WHERE m.project_id = %(project)s AND m.sent_at >= %(since)s AND m.sent_at < %(before)s
    ORDER BY m.sent_at LIMIT %(batch)s
    FOR UPDATE SKIP LOCKED
),
gone AS (
    DELETE FROM {MESSAGES} m WHERE m.id = ANY(ARRAY(SELECT id FROM doomed))
    RETURNING m.conversation_id, m.sent_at
),
counted AS (
    UPDATE {CONVERSATIONS} c SET message_count = greatest(c.message_count - g.n, 0)
    FROM (SELECT conversation_id, count(*) AS n FROM gone GROUP BY conversation_id) g
    WHERE c.id = g.conversation_id
    RETURNING c.id
)
SELECT (SELECT count(*) FROM gone), (SELECT max(sent_at) FROM gone),
    (SELECT count(*) FROM counted)"""
# A project's conversations left with no message whose last one was past the retention
# (through the index on project and last message time); one an append holds is left for the
# next run. The count is checked on the locked row, so an append that just committed keeps
# its conversation.
_PRUNE_CONVERSATIONS = f"""
WITH empty AS (
    SELECT v.id FROM {CONVERSATIONS} v
    WHERE v.project_id = %(project)s AND v.last_message_at < %(before)s
        AND v.message_count = 0
    ORDER BY v.last_message_at LIMIT %(batch)s
    FOR UPDATE SKIP LOCKED
),
gone AS (
    DELETE FROM {CONVERSATIONS} v WHERE v.id = ANY(ARRAY(SELECT id FROM empty))
        AND NOT EXISTS (SELECT 1 FROM {MESSAGES} m WHERE m.conversation_id = v.id)
    RETURNING v.id
)
SELECT count(*) FROM gone"""


@dataclass
class Pruned:
    """What a prune deleted, in how many batches; ``finished`` False when it stopped at its
    deadline (or found another prune running) with work perhaps left."""

    messages: int = 0
    conversations: int = 0
    batches: int = 0
    finished: bool = True
    busy: bool = False


def conversations_prune(
    *,
    now: datetime | None = None,
    batch_size: int = PRUNE_BATCH,
    deadline: float | None = None,
    clock: Callable[[], float] = time.monotonic,
) -> Pruned:
    """Delete the messages older than their project's retention
    (``MemoryPolicy.conversation_retention_days``), project by project in batches of
    ``batch_size`` (each its own transaction), then the conversations left with none.
    Running it again finds nothing to do; a second prune at once returns at once (``busy``).
    ``deadline``: a time of ``clock`` after which no new batch starts."""
    now = now or timezone.now()
    result = Pruned()
    with connection.cursor() as cursor:
        cursor.execute(_DUE, {"now": now, "default_days": RETENTION_DEFAULT})
        due = cursor.fetchall()
    for project_id, before in due:
        params = {"project": project_id, "before": before, "batch": batch_size}
        since = datetime.min.replace(tzinfo=UTC)
        while True:
            found = _batch(result, _PRUNE_MESSAGES, {**params, "since": since}, clock, deadline)
            if found is None:
                return result
            result.messages += found[0]
            if found[0] < batch_size:
                break
            since = found[1]
        while True:
            found = _batch(result, _PRUNE_CONVERSATIONS, params, clock, deadline)
            if found is None:
                return result
            result.conversations += found[0]
            if found[0] < batch_size:
                break
    return result


def _batch(
    result: Pruned,
    statement: str,
    params: dict[str, Any],
    clock: Callable[[], float],
    deadline: float | None,
) -> tuple[Any, ...] | None:
    """One batch in its own transaction, under the prune's lock; None (and ``result`` says
    why) when the deadline has passed or another prune holds the lock."""
    if deadline is not None and clock() >= deadline:
        result.finished = False
        return None
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SELECT pg_try_advisory_xact_lock(%s)", [PRUNE_LOCK])
        if not cursor.fetchone()[0]:
            result.busy, result.finished = True, False
            return None
        cursor.execute(statement, params)
        found: tuple[Any, ...] = cursor.fetchone()
    result.batches += 1
    return found
