"""Conversations found by words and by meaning, ranked, each with its matching messages.

Bounded work whatever a project's size:

* **words**: the messages whose full text matches the query (web-search syntax, the GIN
  index on their search vector), at most ``WORD_MATCHES`` of them ranked (``ts_rank_cd``,
  normalised by the best one to 0..1);
* **meaning**: the messages of the user's (or the project's) ``RECENT_CONVERSATIONS`` most
  recently active conversations, at most ``RECENT_MESSAGES`` of the newest, compared with the
  query's embedding; a cosine below ``MEANING_MIN`` does not count.

A message's score is the mean of the two parts; a conversation's is its best message's.
Ranking is pure (``rank``), over what the two bounded queries found.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from django.db import connection

from knowledge import embeddings
from memories.models import Project
from people.models import Conversation, Message

WORD_MATCHES = 2000
RECENT_CONVERSATIONS = 100
RECENT_MESSAGES = 2000
MEANING_MIN = 0.3
MESSAGES_PER_HIT = 3
QUERY_MAX_CHARS = 500

MESSAGES = Message._meta.db_table
CONVERSATIONS = Conversation._meta.db_table

_WORDS = f"""
WITH q AS (SELECT websearch_to_tsquery('english', %(q)s) AS query),
found AS (
    SELECT m.id, m.conversation_id, m.search_vector FROM {MESSAGES} m, q
    WHERE m.search_vector @@ q.query AND m.project_id = %(project)s
        AND (%(user)s::text IS NULL OR EXISTS (
            SELECT 1 FROM {CONVERSATIONS} c
            WHERE c.id = m.conversation_id AND c.user_ref = %(user)s::text))
    LIMIT %(matches)s
)
SELECT found.id, found.conversation_id, ts_rank_cd(found.search_vector, q.query)
FROM found, q"""

_MEANING = f"""
SELECT m.id, m.conversation_id, array_send(m.vector) FROM {MESSAGES} m
WHERE m.conversation_id IN (
        SELECT c.id FROM {CONVERSATIONS} c
        WHERE c.project_id = %(project)s
            AND (%(user)s::text IS NULL OR c.user_ref = %(user)s::text)
        ORDER BY c.last_message_at DESC LIMIT %(conversations)s)
    AND m.embedding_model = %(model)s AND m.vector IS NOT NULL
ORDER BY m.sent_at DESC LIMIT %(messages)s"""


@dataclass(frozen=True)
class Scored:
    message_id: int
    conversation_id: int
    words: float = 0.0
    meaning: float = 0.0

    @property
    def score(self) -> float:
        return round((self.words + self.meaning) / 2, 6)


@dataclass
class Hit:
    conversation: Conversation
    score: float
    messages: list[tuple[Message, Scored]] = field(default_factory=list)


def rank(
    words: Sequence[tuple[int, int, float]],
    meaning: Sequence[tuple[int, int, float]],
    *,
    limit: int,
) -> list[tuple[int, float, list[Scored]]]:
    """The best ``limit`` conversations as (id, score, their best messages, best first),
    from word matches (message, conversation, rank) and meaning matches (message,
    conversation, cosine). Ties: the newer conversation and message (the higher id)."""
    best = max((r for _, _, r in words), default=0.0) or 1.0
    parts: dict[int, dict[str, float]] = defaultdict(dict)
    owner: dict[int, int] = {}
    for message_id, conversation_id, found in words:
        parts[message_id]["words"] = round(found / best, 6)
        owner[message_id] = conversation_id
    for message_id, conversation_id, cosine in meaning:
        if cosine >= MEANING_MIN:
            parts[message_id]["meaning"] = round(min(cosine, 1.0), 6)
            owner[message_id] = conversation_id
    by_conversation: dict[int, list[Scored]] = defaultdict(list)
    for message_id, found_parts in parts.items():
        by_conversation[owner[message_id]].append(
            Scored(message_id, owner[message_id], **found_parts)
        )
    ranked = []
    for conversation_id, scored in by_conversation.items():
        scored.sort(key=lambda s: (s.score, s.message_id), reverse=True)
        ranked.append((conversation_id, scored[0].score, scored[:MESSAGES_PER_HIT]))
    ranked.sort(key=lambda hit: (hit[1], hit[0]), reverse=True)
    return ranked[:limit]


def _rows(sql: str, params: dict[str, Any]) -> list[tuple]:
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchall()


def conversations_search(
    *, project: Project, q: str, user_id: str | None = None, limit: int = 10
) -> list[Hit]:
    """The project's conversations (of ``user_id`` if given) that match ``q`` by words or by
    meaning, best first, each with its best matching messages. Four queries at most."""
    params: dict[str, Any] = {
        "project": project.pk,
        "user": user_id,
        "q": q,
        "matches": WORD_MATCHES,
        "conversations": RECENT_CONVERSATIONS,
        "messages": RECENT_MESSAGES,
    }
    words = _rows(_WORDS, params)
    meaning: list[tuple[int, int, float]] = []
    query = embeddings.query_vector(q)
    embedder = embeddings.configured()
    if query is not None and embedder is not None:
        found = _rows(_MEANING, {**params, "model": embedder.name})
        cosines = embeddings.similarities(query, [row[2] for row in found])
        meaning = [(row[0], row[1], cosine) for row, cosine in zip(found, cosines, strict=True)]
    ranked = rank(words, meaning, limit=limit)
    if not ranked:
        return []
    conversations = Conversation.objects.in_bulk(
        [conversation_id for conversation_id, _, _ in ranked]
    )
    wanted = [s.message_id for _, _, scored in ranked for s in scored]
    messages = Message.objects.defer("search_vector", "vector").in_bulk(wanted)
    return [
        Hit(
            conversations[conversation_id],
            score,
            [(messages[s.message_id], s) for s in scored if s.message_id in messages],
        )
        for conversation_id, score, scored in ranked
        if conversation_id in conversations
    ]
