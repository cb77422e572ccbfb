"""Concurrency slots: at most ``limit`` requests of one caller at once, held by every process.

A slot is a lease with a deadline, not a counter: taking one is a single atomic step that
first frees the leases whose deadline passed, and a request gives its own lease back by its
id. A lease given back twice, or never (a worker killed, a client gone, an exception between
take and give), costs nothing past its deadline (API_SLOT_SECONDS, which the web server's
worker timeout bounds every request by): the slot frees itself, and nothing drifts.

* With Redis (``API_SLOTS_URL``, by default ``CACHE_URL``): a sorted set per caller of lease
  ids scored by deadline, taken by a Lua script on Redis's own clock.
* Otherwise in PostgreSQL: a row per slot (api.models.SlotLease), taken by one UPDATE that
  picks a free row with ``FOR NO KEY UPDATE SKIP LOCKED`` on the database's clock. While
  Redis is unreachable, slots are taken there too (a lease is given back where it was
  taken).

Never the file cache: its increments are a read and a write, not atomic across processes.
"""

from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass, field
from functools import cache
from typing import Protocol

import redis
from django.conf import settings
from django.db import DatabaseError, connection

from api.models import SlotLease
from memories import replicas

logger = logging.getLogger(__name__)


class Store(Protocol):
    def take(self, ident: str, limit: int, seconds: float) -> str | None: ...

    def give_back(self, ident: str, lease: str) -> None: ...


@dataclass
class Lease:
    """A slot held by a request: ``give_back`` frees it (once; again does nothing)."""

    store: Store
    ident: str
    id: str
    given_back: bool = field(default=False)

    def give_back(self) -> None:
        if self.given_back:
            return
        self.given_back = True
        try:
            self.store.give_back(self.ident, self.id)
        except Exception:  # the deadline frees it: a response is never failed for it
            logger.warning("A concurrency slot could not be given back", exc_info=True)


# --- PostgreSQL ---------------------------------------------------------------------------------

_TABLE = SlotLease._meta.db_table
_TAKE = f"""
UPDATE {_TABLE} SET lease = %(lease)s,
    deadline = clock_timestamp() + make_interval(secs => %(seconds)s)
WHERE id = (
    SELECT id FROM {_TABLE}
    WHERE ident = %(ident)s AND slot < %(limit)s AND deadline <= clock_timestamp()
    ORDER BY slot LIMIT 1
    FOR NO KEY UPDATE SKIP LOCKED
)
RETURNING id
"""
# The rows of slots 0 .. limit - 1 that do not exist yet (a new caller, a higher limit).
_MAKE = f"""
INSERT INTO {_TABLE} (ident, slot, lease, deadline)
SELECT %(ident)s, s, NULL, '-infinity' FROM generate_series(0, %(limit)s - 1) AS s
ON CONFLICT (ident, slot) DO NOTHING
RETURNING id
"""
_GIVE_BACK = f"""
UPDATE {_TABLE} SET lease = NULL, deadline = '-infinity' WHERE id = %(id)s AND lease = %(lease)s
"""


class PostgresStore:
    """Slots as rows (see the module). Each statement is a transaction of its own (requests
    run outside one), so a lease is there for every process as soon as it is taken."""

    def take(self, ident: str, limit: int, seconds: float) -> str | None:
        """The lease ("row:uuid"), or None."""
        lease = str(uuid.uuid4())
        values: dict[str, str | int | float] = {
            "ident": ident,
            "limit": limit,
            "seconds": seconds,
            "lease": lease,
        }
        # Bookkeeping: no read waits for a slot (memories.replicas).
        with replicas.bookkeeping(), connection.cursor() as cursor:
            cursor.execute(_TAKE, values)
            row = cursor.fetchone()
            if row is None:
                # Missing slots are made, and taken; or every slot is held; or another
                # request has just made them (its rows were not there for this one's first
                # look, and its INSERT waited on them): a second look tells.
                cursor.execute(_MAKE, values)
                cursor.execute(_TAKE, values)
                row = cursor.fetchone()
        return f"{row[0]}:{lease}" if row is not None else None

    def give_back(self, ident: str, lease: str) -> None:
        row, lease_id = lease.split(":", 1)
        with replicas.bookkeeping(), connection.cursor() as cursor:
            cursor.execute(_GIVE_BACK, {"id": int(row), "lease": lease_id})


# --- Redis --------------------------------------------------------------------------------------

# KEYS[1] the caller's set; ARGV: limit, lease seconds (in ms), lease id. Redis's clock, so
# that every web server agrees on when a lease ran out.
_TAKE_SCRIPT = """
if redis.replicate_commands then redis.replicate_commands() end  -- TIME before writes (< 5)
local now = redis.call('TIME')
local ms = tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ms)
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[1]) then
    return 0
end
redis.call('ZADD', KEYS[1], ms + tonumber(ARGV[2]), ARGV[3])
redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[2]))
return 1
"""


@cache
def _client(url: str) -> redis.Redis:
    # A Redis that is down or stuck costs a request half a second at most.
    return redis.Redis.from_url(url, socket_timeout=0.5, socket_connect_timeout=0.5)


class RedisStore:
    def __init__(self, url: str) -> None:
        self.client = _client(url)
        self.script = self.client.register_script(_TAKE_SCRIPT)

    @staticmethod
    def key(ident: str) -> str:
        return f"slots:{ident}"

    def take(self, ident: str, limit: int, seconds: float) -> str | None:
        lease = str(uuid.uuid4())
        taken = self.script(keys=[self.key(ident)], args=[limit, int(seconds * 1000), lease])
        return lease if taken else None

    def give_back(self, ident: str, lease: str) -> None:
        self.client.zrem(self.key(ident), lease)


# --- taking one ---------------------------------------------------------------------------------


def take(ident: str, limit: int) -> Lease | bool:
    """A slot of ``ident`` (whose requests may hold ``limit`` at once); False when all are
    held. True when no store can be asked (PostgreSQL too is unreachable): the request goes
    on without a slot, and fails on its own if it needs the database (a 503), while what
    needs none (the API's schema) is still answered."""
    seconds = settings.API_SLOT_SECONDS
    if settings.API_SLOTS_URL:
        try:
            redis_store = RedisStore(settings.API_SLOTS_URL)
            lease = redis_store.take(ident, limit, seconds)
            return Lease(redis_store, ident, lease) if lease else False
        except redis.RedisError:
            logger.warning("Redis is unreachable: concurrency slots are taken in PostgreSQL")
    store = PostgresStore()
    try:
        lease = store.take(ident, limit, seconds)
    except DatabaseError as error:
        logger.warning("No concurrency slot could be taken (%s)", type(error).__name__)
        return True
    return Lease(store, ident, lease) if lease else False
