"""Uses of memories: the access count and last access of what agents are given.

Written with its own statement per assembly, this bookkeeping costs the database about as
much as answering a repeated request from the cache. With a shared Redis
(``MEMORY_USES_URL``, by default ``CACHE_URL``), a use is noted there instead, in one round
trip, and the database gets every use noted since the last flush in a few set-based
statements: by the beat every ``MEMORY_USES_FLUSH_SECONDS``, and first thing in each job that
reads them (decay, tiers, eviction, compression). Without Redis, or while it is down, a use
is written at once.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from functools import cache

import redis
from django.conf import settings
from django.db import DatabaseError, connection
from django.utils import timezone

from memories import replicas
from memories.locks import lock_ids, retried
from memories.models import Memory

logger = logging.getLogger(__name__)

FLUSH_BATCH = 5000
# The memories are locked in id order first (memories.locks): the UPDATE alone locks them in
# the order its plan reads them, on a small table the order they lie on disk.
_UPDATE = f"""
WITH {lock_ids("locked", "id = ANY(%(ids)s::bigint[])")}
UPDATE {Memory._meta.db_table} AS m
SET access_count = m.access_count + u.uses,
    last_accessed_at = greatest(m.last_accessed_at, u.last_at)
FROM unnest(%(ids)s::bigint[], %(uses)s::int[], %(last_at)s::timestamptz[])
    AS u(id, uses, last_at)
JOIN locked ON locked.id = u.id
WHERE m.id = u.id
"""


@cache
def _client(url: str) -> redis.Redis:
    return redis.Redis.from_url(url, socket_timeout=1, socket_connect_timeout=1)


def _buffer() -> tuple[redis.Redis, str, str] | None:
    """The Redis client and this database's two hashes (uses and last use by memory id)."""
    url = settings.MEMORY_USES_URL
    if not url:
        return None
    prefix = f"memories:uses:{connection.settings_dict['NAME']}"
    return _client(url), f"{prefix}:count", f"{prefix}:last"


def write(memory_ids: Iterable[int], now: datetime | None = None) -> None:
    """Count a use of each memory at once, in one statement."""
    ids = sorted(set(memory_ids))
    if ids:
        at = now or timezone.now()
        _write(ids, [1] * len(ids), [at] * len(ids))


@retried
def _write(ids: list[int], uses: list[int], last_at: list[datetime]) -> None:
    # Bookkeeping: nobody reads a count back at once (memories.replicas).
    with replicas.bookkeeping(), connection.cursor() as cursor:
        cursor.execute(_UPDATE, {"ids": ids, "uses": uses, "last_at": last_at})


def write_counts(counts: Mapping[int, tuple[int, datetime]]) -> None:
    """Add uses counted elsewhere (memory id: how many, the last one), in one statement:
    an import from another store, or a demo that plays weeks of use."""
    rows = sorted((memory_id, n, at) for memory_id, (n, at) in counts.items() if n > 0)
    if rows:
        _write(*(list(column) for column in zip(*rows, strict=True)))


def record(memory_ids: Iterable[int], now: datetime | None = None) -> None:
    """Count a use of each memory: noted in Redis when there is one, else written."""
    ids = sorted(set(memory_ids))
    if not ids:
        return
    buffer = _buffer()
    if buffer is None:
        write(ids, now)
        return
    at = now or timezone.now()
    try:
        _note(*buffer, [(memory_id, 1, at) for memory_id in ids])
    except redis.RedisError:
        logger.warning("The uses buffer is unreachable; writing %d uses at once", len(ids))
        write(ids, now)


def flush() -> int:
    """Write every use noted so far; returns how many memories were updated. The buffer is
    taken in one Redis transaction, so a use noted meanwhile waits for the next flush and
    two flushes at once never write a use twice; a failed write puts what it did not write
    back."""
    buffer = _buffer()
    if buffer is None:
        return 0
    client, counts, last = buffer
    pipeline = client.pipeline(transaction=True)
    pipeline.hgetall(counts)
    pipeline.hgetall(last)
    pipeline.delete(counts, last)
    noted_counts, noted_last, _ = pipeline.execute()
    rows = sorted(
        (
            int(memory_id),
            int(count),
            datetime.fromtimestamp(float(noted_last.get(memory_id, 0)), tz=UTC),
        )
        for memory_id, count in noted_counts.items()
    )
    written = 0
    try:
        for start in range(0, len(rows), FLUSH_BATCH):
            batch = rows[start : start + FLUSH_BATCH]
            # One statement: a transaction of its own.
            _write(*(list(column) for column in zip(*batch, strict=True)))
            written += len(batch)
    except DatabaseError:
        _note(client, counts, last, rows[written:])
        raise
    return written


# Adds uses and keeps the later of two last uses (out of order from several workers, or put
# back by a failed flush): ARGV holds (id, uses, last use) triples.
_NOTE = """
for i = 1, #ARGV, 3 do
    redis.call('HINCRBY', KEYS[1], ARGV[i], ARGV[i + 1])
    local noted = tonumber(redis.call('HGET', KEYS[2], ARGV[i]) or '0')
    if tonumber(ARGV[i + 2]) > noted then
        redis.call('HSET', KEYS[2], ARGV[i], ARGV[i + 2])
    end
end
"""


def _note(
    client: redis.Redis, counts: str, last: str, rows: list[tuple[int, int, datetime]]
) -> None:
    """Note uses in one round trip (one script, applied whole)."""
    arguments = [value for id_, count, at in rows for value in (id_, count, at.timestamp())]
    client.eval(_NOTE, 2, counts, last, *arguments)
