"""Reads on streaming replicas, with read-your-writes (``DATABASE_REPLICA_URLS``).

With no replica configured none of this is installed: every statement goes to the primary,
as it always did. With replicas (database aliases ``replica_1``, ``replica_2``, …):

* **What is read where.** A *reading request* (GET, HEAD, OPTIONS, or a POST to a view that
  reads, such as ``/context``: its ``replica_reads`` attribute) reads on a replica;
  every other request, every job and command, every write, and every read inside a
  transaction of the primary, use the primary (``ReplicaRouter``; raw SQL of the read paths
  asks ``read_connection()``).
* **Read-your-writes**, as GitLab's database load balancing does it. A request that wrote
  remembers the primary's WAL position (``pg_current_wal_lsn()``) for its project and for
  its caller (the API key, or the person's session) in the shared cache: Redis with
  ``CACHE_URL``, files otherwise, as the assembly cache. A reading request for that project
  or by that caller uses a replica only once the replica has replayed that position
  (``pg_last_wal_replay_lsn()``), else the primary: a write is visible at once to whoever
  made it and to every reader of its project, however far behind the replica is.
* **A replica down or far behind costs nothing.** Each reading request asks the replica it
  would use for its position in one short statement; a replica that cannot be reached
  (``DATABASE_REPLICA_CONNECT_TIMEOUT``) is skipped for ``DATABASE_REPLICA_RETRY_SECONDS``,
  one that is more than ``DATABASE_REPLICA_MAX_LAG_SECONDS`` behind is skipped for this
  request, and the read goes to another replica or the primary. The check is made by every
  reading request, on the connection its reads then use, so only a replica that fails in
  the instant between the check and the reads fails a request.

Positions are compared as numbers (``X/Y`` is ``X * 2**32 + Y``). The remembered position
only grows (the larger of the stored and the new one is kept), except for two writes of one
project committing in the same instant, where the smaller may win the race to the cache:
the write of the slower one is then read from the primary only if the replica is behind it.
"""

from __future__ import annotations

import contextvars
import hashlib
import logging
import random
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from django.core.cache import caches
from django.db import DEFAULT_DB_ALIAS, DatabaseError, connections
from django.http import HttpRequest, HttpResponse
from prometheus_client import Counter

from memories.keys import split_token

logger = logging.getLogger(__name__)

PRIMARY = DEFAULT_DB_ALIAS
CACHE_ALIAS = "replicas"
READING_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
WRITES = ("INSERT", "UPDATE", "DELETE", "MERGE", "COPY")

READS = Counter(
    "database_reading_requests",
    "Reading requests, by the database that answered their reads (default: the primary; a"
    " replica; none: no read, as a cached context).",
    ["database"],
)
REPLICA_SKIPS = Counter(
    "database_replica_skips",
    "Times a replica was passed over, by reason (down, lagging, behind a write).",
    ["replica", "reason"],
)


def replica_aliases() -> list[str]:
    return [alias for alias in settings.DATABASES if alias.startswith("replica_")]


def lsn_number(text: str | None) -> int | None:
    """``"16/B374D848"`` as one number (None stays None)."""
    if not text:
        return None
    high, low = text.split("/")
    return (int(high, 16) << 32) + int(low, 16)


# ---- what the current request is ------------------------------------------------------


@dataclass
class Scope:
    """What routing knows of the request being answered."""

    reading: bool = False
    principal: str | None = None
    projects: set[int] = field(default_factory=set)
    # The position this request must see (None: not looked up yet since the last change).
    needed: int | None = None
    looked_up: bool = False
    alias: str | None = None  # the database chosen for this request's reads
    checked: dict[str, tuple[int | None, float]] = field(default_factory=dict)
    wrote: bool = False
    bookkeeping: int = 0


_scope: contextvars.ContextVar[Scope | None] = contextvars.ContextVar("replica_scope", default=None)
# Replicas not to try before this moment (time.monotonic()), by alias: per process.
_down_until: dict[str, float] = {}


def note_project(project_id: int | None) -> None:
    """The request acts for this project: its writes are remembered for it, and its reads
    wait for the project's last write."""
    scope = _scope.get()
    if scope is not None and project_id is not None and project_id not in scope.projects:
        scope.projects.add(project_id)
        scope.looked_up = False


@contextmanager
def bookkeeping() -> Iterator[None]:
    """Writes that change nothing a caller reads back (a key's last use): not remembered."""
    scope = _scope.get()
    if scope is None:
        yield
        return
    scope.bookkeeping += 1
    try:
        yield
    finally:
        scope.bookkeeping -= 1


# ---- where a read goes ----------------------------------------------------------------


def read_alias() -> str:
    """The database this read should use."""
    scope = _scope.get()
    if scope is None or not scope.reading:
        return PRIMARY
    if connections[PRIMARY].in_atomic_block:
        return PRIMARY
    if scope.alias == PRIMARY or (scope.alias is not None and scope.looked_up):
        return scope.alias
    if not scope.looked_up:
        scope.needed = _needed(scope)
        scope.looked_up = True
    # Once on the primary, a request stays there: its reads never go back in time.
    scope.alias = _choose(scope)
    return scope.alias


def read_connection() -> Any:
    """The connection raw SQL of a read path should use (see ``read_alias``)."""
    return connections[read_alias()]


def read_position() -> int | None:
    """The WAL position the current request's reads have seen: None on the primary (all of
    it), else what its replica had replayed when the request chose it."""
    scope = _scope.get()
    alias = scope.alias if scope is not None else None
    if scope is None or alias is None or alias == PRIMARY:
        return None
    return scope.checked.get(alias, (None, 0.0))[0]


def primary_position() -> int | None:
    """The primary's WAL position now (None without replicas: nobody asks)."""
    if not replica_aliases():
        return None
    with connections[PRIMARY].cursor() as cursor:
        cursor.execute("SELECT pg_current_wal_lsn()::text")
        return lsn_number(cursor.fetchone()[0])


def _keys(scope: Scope) -> list[str]:
    keys = [f"replicas:lsn:project:{pid}" for pid in sorted(scope.projects)]
    if scope.principal:
        keys.append(f"replicas:lsn:caller:{scope.principal}")
    return keys


def _needed(scope: Scope) -> int | None:
    keys = _keys(scope)
    if not keys:
        return None
    try:
        found = caches[CACHE_ALIAS].get_many(keys)
    except Exception as exc:  # no cache: no way to know what was written; read the primary
        logger.warning("The replicas' cache could not be read (%s); reading the primary", exc)
        return 2**64
    return max((int(value) for value in found.values()), default=None)


def _choose(scope: Scope) -> str:
    replicas = replica_aliases()
    random.shuffle(replicas)
    if scope.alias in replicas:  # chosen before in this request: its reads stay on it if they may
        replicas.remove(scope.alias)
        replicas.insert(0, scope.alias)
    now = time.monotonic()
    for alias in replicas:
        if _down_until.get(alias, 0.0) > now:
            continue
        if alias not in scope.checked:
            try:
                scope.checked[alias] = _position(alias)
            except DatabaseError as exc:
                _mark_down(alias, exc)
                continue
        replayed, lag = scope.checked[alias]
        if lag > settings.DATABASE_REPLICA_MAX_LAG_SECONDS:
            REPLICA_SKIPS.labels(alias, "lagging").inc()
            continue
        if scope.needed is not None and replayed is not None and replayed < scope.needed:
            REPLICA_SKIPS.labels(alias, "behind_write").inc()
            continue
        return alias
    return PRIMARY


_POSITION_SQL = (
    "SELECT pg_last_wal_replay_lsn()::text, CASE WHEN pg_last_wal_receive_lsn()"
    " IS NOT DISTINCT FROM pg_last_wal_replay_lsn() THEN 0"
    " ELSE coalesce(extract(epoch FROM now() - pg_last_xact_replay_timestamp()), 0) END"
)


def _position(alias: str) -> tuple[int | None, float]:
    """What the replica has replayed, and how many seconds of commits it has yet to replay
    (None and 0 for a server that is not a standby: it is as fresh as it gets)."""
    with connections[alias].cursor() as cursor:
        cursor.execute(_POSITION_SQL)
        replayed, lag = cursor.fetchone()
    return lsn_number(replayed), float(lag)


def _mark_down(alias: str, exc: BaseException) -> None:
    _down_until[alias] = time.monotonic() + settings.DATABASE_REPLICA_RETRY_SECONDS
    REPLICA_SKIPS.labels(alias, "down").inc()
    logger.warning(
        "Replica %s failed (%s); reads skip it for %s s",
        alias,
        str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__,
        settings.DATABASE_REPLICA_RETRY_SECONDS,
    )
    with suppress(DatabaseError):
        connections[alias].close()


def positions() -> Iterable[tuple[str, bool, float | None, int | None]]:
    """Each replica: up, seconds behind, bytes behind the primary (for the metrics)."""
    current = primary_position()
    if current is None:
        return
    for alias in replica_aliases():
        try:
            replayed, lag = _position(alias)
        except DatabaseError as exc:
            _mark_down(alias, exc)
            yield alias, False, None, None
            continue
        yield alias, True, lag, max(current - replayed, 0) if replayed is not None else 0


# ---- the router -------------------------------------------------------------------------


# Read on the primary whatever the request: who is signed in (a session made a moment ago
# must be found by the next request) and sign-in throttling.
PRIMARY_APPS = frozenset({"sessions", "auth", "axes", "contenttypes", "admin"})


class ReplicaRouter:
    """Django's database router: reads where ``read_alias`` says, writes on the primary."""

    def db_for_read(self, model: Any, **hints: Any) -> str:
        if model._meta.app_label in PRIMARY_APPS:
            return PRIMARY
        return read_alias()

    def db_for_write(self, model: Any, **hints: Any) -> str:
        return PRIMARY

    def allow_relation(self, obj1: Any, obj2: Any, **hints: Any) -> bool:
        return True  # one database, copied

    def allow_migrate(self, db: str, app_label: str, **hints: Any) -> bool:
        return db == PRIMARY


# ---- the middleware ---------------------------------------------------------------------


def _principal(request: HttpRequest) -> str | None:
    header = request.META.get("HTTP_AUTHORIZATION", "")
    kind, _, token = header.partition(" ")
    if kind.lower() == "bearer" and token:
        parts = split_token(token.strip())
        if parts is not None:
            return f"key:{parts[0]}"
    session = request.COOKIES.get(settings.SESSION_COOKIE_NAME)
    if session:
        return "session:" + hashlib.sha256(session.encode()).hexdigest()[:32]
    return None


class ReplicaReadsMiddleware:
    """Routes each request's reads (see the module's docstring) and remembers its writes."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        scope = Scope(principal=_principal(request))
        token = _scope.set(scope)
        try:
            with connections[PRIMARY].execute_wrapper(_SpotWrites(scope)):
                response = self.get_response(request)
            if scope.reading:  # "none": answered without reading a database (a cache hit)
                READS.labels(scope.alias or "none").inc()
            if scope.wrote:
                remember_writes(scope.projects, scope.principal)
            return response
        finally:
            _scope.reset(token)

    def process_view(
        self, request: HttpRequest, view: Any, args: Any, kwargs: Any
    ) -> HttpResponse | None:
        scope = _scope.get()
        if scope is not None:
            owner = getattr(view, "cls", view)
            scope.reading = request.method in READING_METHODS or bool(
                getattr(owner, "replica_reads", False)
            )
        return None


class _SpotWrites:
    """An execute wrapper of the primary: notes that the request wrote (bookkeeping aside)."""

    def __init__(self, scope: Scope) -> None:
        self.scope = scope

    def __call__(self, execute: Any, sql: Any, params: Any, many: bool, context: Any) -> Any:
        scope = self.scope
        # An inner request (an MCP tool's call, in process) has its own scope and wrapper.
        if not scope.wrote and not scope.bookkeeping and _scope.get() is scope:
            scope.wrote = writes(str(sql))
        return execute(sql, params, many, context)


def writes(sql: str) -> bool:
    """Whether a statement writes: it starts with a writing verb, or a WITH holds one."""
    head = sql.lstrip()[:6].upper()
    if head.startswith(WRITES):
        return True
    return head.startswith("WITH") and any(verb in sql.upper() for verb in WRITES[:3])


def remember_writes(project_ids: Iterable[int], principal: str | None) -> None:
    """Remember the primary's position for these projects and this caller."""
    keys = [f"replicas:lsn:project:{pid}" for pid in sorted(set(project_ids))]
    if principal:
        keys.append(f"replicas:lsn:caller:{principal}")
    if not keys:
        return
    position = primary_position() or 0
    try:
        cache = caches[CACHE_ALIAS]
        known = cache.get_many(keys)
        cache.set_many(
            {key: max(position, int(known.get(key, 0))) for key in keys},
            timeout=settings.DATABASE_REPLICA_STICKY_SECONDS,
        )
    except Exception as exc:  # the write is committed; its readers fall back on lag checks
        logger.warning("The replicas' cache could not be written (%s)", exc)


@contextmanager
def reading_scope(*projects: int) -> Iterator[Scope]:
    """A reading scope outside a request (the tests): reads may use a replica."""
    scope = Scope(reading=True, projects=set(projects))
    token = _scope.set(scope)
    try:
        yield scope
    finally:
        _scope.reset(token)
