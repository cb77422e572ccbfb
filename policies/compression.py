"""Compression: long, rarely used, old memories get a shorter content; the original stays
in their history."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.db import connection, transaction

from knowledge import embeddings
from memories import history
from memories.actors import Actor
from memories.locks import lock_ids
from memories.models import EventAction
from memories.services import uses
from memories.text import content_hash
from memories.tokens import count_tokens
from policies.compressors import Compressor, configured_compressor
from policies.runner import (
    MEMORIES,
    POLICY_JOIN,
    JobResult,
    changed_counts,
    days,
    params,
    policy,
    start,
    task,
)

_COMPRESS_WINDOW = f"""
SELECT max(id) FROM (
    SELECT id FROM {MEMORIES} WHERE active AND id > %(after)s
    ORDER BY id LIMIT %(batch_size)s
) AS win
"""
_COMPRESS_CANDIDATES = f"""
SELECT m.id, m.content, m.token_count, m.content_hash, {policy("compression_ratio")}
FROM {MEMORIES} m {POLICY_JOIN}
WHERE m.active AND m.compressed_at IS NULL AND m.id > %(after)s AND m.id <= %(last)s
    AND m.created_at <= %(now)s - {days("compress_age_days")}
    AND m.access_count < {policy("compress_access_threshold")}
    AND m.token_count > {policy("compress_min_tokens")}
ORDER BY m.id
"""
# Written only where the content is still the one compressed (a concurrent edit or a second
# worker wins, and this row is left alone); a NULL content marks a memory that cannot be
# shortened as handled.
# What the statement writes, and the history rows of it, as the store builds them
# (memories.history).
_CHANGED = history.update_memories(
    "changed",
    assignments={
        "content": "coalesce(d.content, m.content)",
        "token_count": "coalesce(d.token_count, m.token_count)",
        "content_hash": "coalesce(d.content_hash, m.content_hash)",
        "compressed_at": "%(now)s",
        "updated_at": "CASE WHEN d.content IS NULL THEN m.updated_at ELSE %(now)s END",
    },
    source="d JOIN locked ON locked.id = d.id",
    where="m.id = d.id AND m.active AND m.compressed_at IS NULL AND m.content_hash = d.before_hash",
    returning="m.id, m.project_id, d.before, d.before_tokens, d.content, d.token_count",
)
_EVENTS = history.insert_events(
    "events",
    history.Rows(
        "changed",
        EventAction.COMPRESSED,
        history.changes(
            history.change("content", "before", "content"),
            history.change("token_count", "before_tokens", "token_count"),
        ),
        "'compressed from ' || before_tokens || ' to ' || token_count || ' tokens ('"
        " || %(compressor)s || ')'",
        where="content IS NOT NULL",
    ),
)
_COMPRESS_WRITE = f"""
WITH d AS (
    SELECT * FROM unnest(%(ids)s::bigint[], %(before_hashes)s::text[], %(befores)s::text[],
        %(before_tokens)s::int[], %(contents)s::text[], %(tokens)s::int[], %(hashes)s::text[])
        AS d(id, before_hash, before, before_tokens, content, token_count, content_hash)
), {lock_ids("locked", "id = ANY(%(ids)s::bigint[])")}, {_CHANGED}, {_EVENTS}
SELECT project_id, count(*) FILTER (WHERE content IS NOT NULL) FROM changed GROUP BY project_id
"""


def compress_memories(
    *,
    now: datetime | None = None,
    batch_size: int = 1000,
    compressor: Compressor | None = None,
    seconds: float | None = None,
) -> JobResult:
    """Memories older than ``compress_age_days``, given to agents fewer than
    ``compress_access_threshold`` times and longer than ``compress_min_tokens`` get a
    shorter content at about ``compression_ratio`` of their tokens. The original stays in
    the ``compressed`` history row (``memories_restore_content`` brings it back); the search
    vector and match keys follow the content (generated columns).

    The compressor runs outside any transaction (it may call a remote model): each window's
    candidates are read, compressed, then written in one statement that re-checks each row."""
    uses.flush()
    compressor = compressor or configured_compressor()
    common = params(now, batch_size, Actor.system("compression"), compressor=compressor.name)
    result = start("compress_memories", seconds)
    after = 0
    while not result.out_of_time():
        with connection.cursor() as cursor:
            cursor.execute(_COMPRESS_WINDOW, {**common, "after": after})
            last = cursor.fetchone()[0]
            if last is None:
                break
            cursor.execute(_COMPRESS_CANDIDATES, {**common, "after": after, "last": last})
            candidates = cursor.fetchall()
        columns: dict[str, list[Any]] = {
            name: []
            for name in (
                "ids", "before_hashes", "befores", "before_tokens", "contents", "tokens", "hashes"
            )
        }  # fmt: skip
        for memory_id, content, tokens, digest, ratio in candidates:
            shorter = compressor.compress(content, max(1, round(tokens * ratio)))
            shortened = shorter != content
            short_tokens = count_tokens(shorter) if shortened else None
            for name, value in zip(
                columns,
                (
                    memory_id,
                    digest,
                    content,
                    tokens,
                    shorter if shortened else None,
                    short_tokens,
                    content_hash(shorter) if shortened else None,
                ),
                strict=True,
            ):
                columns[name].append(value)
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(_COMPRESS_WRITE, {**common, **columns})
            counts = changed_counts(cursor.fetchall())
            history.written(counts)
        # The shorter words get their embedding (a row another writer changed meanwhile
        # is not stale, and is left alone).
        embeddings.refresh(
            [i for i, short in zip(columns["ids"], columns["contents"], strict=True) if short]
        )
        result.add(counts)
        after = last
    return result


compress_memories_task = task("policies.compress_memories", compress_memories)
