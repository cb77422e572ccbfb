"""The per-key concurrency limit (API_KEY_CONCURRENCY) holds across worker processes, is
shared fairly, and heals: a slot is a lease with a deadline, so one taken by a worker that
died frees itself. Without Redis (leases in PostgreSQL) and with the real Redis."""

from __future__ import annotations

import http.client
import os
import signal
import threading
import time
import uuid
from collections import Counter

import psutil
import pytest
import redis
from django.db import connection, transaction

from api import slots
from memories import services
from tests.api.conftest import client_with_key, url
from tests.concurrency import Call, wait_until, waiting_on_locks
from tests.support import gunicorn_server, http_get, require

REDIS = os.environ.get("TEST_REDIS_URL", "redis://127.0.0.1:6379/13")


def _redis_or_skip() -> None:
    try:
        reachable = bool(redis.Redis.from_url(REDIS, socket_connect_timeout=0.5).ping())
    except redis.RedisError:
        reachable = False
    require(
        reachable, f"No Redis at {REDIS} (or set TEST_REDIS_URL)", strict=bool(os.environ.get("CI"))
    )


def _store_env(store: str) -> dict[str, str]:
    if store == "redis":
        _redis_or_skip()
        return {"CACHE_URL": REDIS}
    return {}


STORES = ["postgresql", "redis"]


def _get(port: int, path: str, token: str) -> int:
    return http_get(port, path, Authorization=f"Bearer {token}")[0]


@pytest.mark.transactional
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("store", STORES)
def test_clients_at_the_limit_are_never_refused(tmp_path, project, store):
    """Four clients of one key, each one request at a time, at a limit of four: never a 429,
    over four workers; and one at a time afterwards, never either."""
    _, token = services.api_key_create(project=project, name="pair")
    path = url(project, "memories")
    limits = {"API_KEY_CONCURRENCY": "4", "API_THROTTLE_RATE": "1000000/min"}
    with gunicorn_server(tmp_path, workers=4, **limits, **_store_env(store)) as port:
        statuses: list[int] = []
        deadline = time.monotonic() + 5

        def client() -> None:
            while time.monotonic() < deadline:
                statuses.append(_get(port, path, token))

        threads = [threading.Thread(target=client) for _ in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        after = Counter(_get(port, path, token) for _ in range(20))
    answers = Counter(statuses)
    assert answers[200] > 20, answers
    assert answers[429] == 0, answers
    assert after == Counter({200: 20})


@pytest.mark.transactional
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("store", STORES)
def test_a_slot_taken_by_a_killed_worker_frees_itself(tmp_path, project, store):
    """A request holds the key's only slot; its worker is killed (SIGKILL) before it gives
    the slot back. The lease runs out (API_SLOT_SECONDS) and the key is answered again."""
    _, token = services.api_key_create(project=project, name="lost")
    path = url(project, "memories")
    limits = {"API_KEY_CONCURRENCY": "1", "API_SLOT_SECONDS": "3"}
    with gunicorn_server(tmp_path, workers=2, **limits, **_store_env(store)) as port:
        assert _get(port, path, token) == 200
        with transaction.atomic():
            with connection.cursor() as cursor:  # the request waits here, holding its slot
                cursor.execute("LOCK TABLE project_memories IN ACCESS EXCLUSIVE MODE")
            stuck = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            stuck.request("GET", path, headers={"Authorization": f"Bearer {token}"})
            wait_until(lambda: waiting_on_locks() >= 1, "the request waits on the table")
            server = next(
                process
                for process in psutil.process_iter(["cmdline", "environ"])
                if "gunicorn" in " ".join(process.info["cmdline"] or [])
                and (process.info["environ"] or {}).get("BIND") == f"127.0.0.1:{port}"
                and process.children()
            )
            for worker in server.children():
                os.kill(worker.pid, signal.SIGKILL)
        stuck.close()
        killed = time.monotonic()
        statuses = []
        while time.monotonic() - killed < 15:
            try:
                statuses.append(_get(port, path, token))
            except OSError:  # the workers are being replaced
                statuses.append(0)
            if statuses[-1] == 200:
                break
            time.sleep(0.25)
        freed_after = time.monotonic() - killed
        after = Counter(_get(port, path, token) for _ in range(10))
    assert statuses[-1] == 200, statuses
    assert freed_after < 3 + 5
    assert after == Counter({200: 10})


@pytest.mark.django_db
def test_an_export_holds_its_slot_until_it_is_sent(project, make_memory, settings):
    """The export streams after its view returned: its slot is given back once the last line
    is sent, not before, so it counts against the key's limit the whole time."""
    settings.API_KEY_CONCURRENCY = 1
    agent = client_with_key(project)
    make_memory(project=project)
    export = agent.get(url(project, "export"))
    assert export.status_code == 200
    assert agent.get(url(project, "memories")).status_code == 429
    assert b'"kind":"memory"' in b"".join(export.streaming_content)
    assert agent.get(url(project, "memories")).status_code == 200


@pytest.mark.django_db(transaction=True)  # the server's close ends the request's connections
def test_an_export_abandoned_by_its_client_gives_its_slot_back(project, settings):
    settings.API_KEY_CONCURRENCY = 1
    agent = client_with_key(project)
    export = agent.get(url(project, "export"))
    export.close()  # the client went away before reading it
    assert agent.get(url(project, "memories")).status_code == 200


def _store(store: str) -> slots.Store:
    if store == "redis":
        _redis_or_skip()
        return slots.RedisStore(REDIS)
    return slots.PostgresStore()


@pytest.mark.transactional
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("store", STORES)
def test_slots_taken_at_once_never_exceed_the_limit(store):
    """Twelve takers at the same moment, each on its own connection, for three slots."""
    ident = f"test:{uuid.uuid4()}"
    chosen = _store(store)
    start = threading.Barrier(12)
    calls = [Call(lambda: (start.wait(), chosen.take(ident, 3, 30))[1]) for _ in range(12)]
    leases = [lease for lease in (call.join() for call in calls) if lease]
    assert len(leases) == 3
    assert chosen.take(ident, 3, 30) is None
    chosen.give_back(ident, leases[0])
    chosen.give_back(ident, leases[0])  # twice: still one slot
    assert chosen.take(ident, 3, 30) is not None
    assert chosen.take(ident, 3, 30) is None
    assert chosen.take(ident, 4, 30) is not None  # a higher limit has more slots


@pytest.mark.transactional
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("store", STORES)
def test_the_first_requests_of_a_caller_at_once_all_get_a_slot(store):
    """A caller's first slots are made as they are first taken: six takers at once, far
    below the limit, are all given one (none refused while another makes them)."""
    ident = f"test:{uuid.uuid4()}"
    chosen = _store(store)
    start = threading.Barrier(6)
    calls = [Call(lambda: (start.wait(), chosen.take(ident, 64, 30))[1]) for _ in range(6)]
    assert all(call.join() for call in calls)


@pytest.mark.django_db
@pytest.mark.parametrize("store", STORES)
def test_a_slot_never_given_back_frees_itself_at_its_deadline(store):
    ident = f"test:{uuid.uuid4()}"
    chosen = _store(store)
    assert chosen.take(ident, 1, 0.3) is not None
    assert chosen.take(ident, 1, 0.3) is None
    time.sleep(0.4)
    assert chosen.take(ident, 1, 30) is not None
