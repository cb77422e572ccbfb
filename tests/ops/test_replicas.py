"""Reads on a real streaming replica (memories.replicas), end to end.

The set-up starts a PostgreSQL primary and a streaming replica of it that replays the WAL
three seconds late (bench/cluster.py, the machine's binaries), migrates a database there,
and runs the service under gunicorn with ``DATABASE_REPLICA_URLS``: once with the file
caches and one connection per thread, once with Redis and psycopg's pool.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from bench import cluster
from bench.server import Server, call, manage, start_gunicorn

DELAY_SECONDS = 3
METRICS_TOKEN = "replica-test-metrics-token-0123456789"
REDIS_URL = os.environ.get("REPLICA_TEST_REDIS_URL", "redis://127.0.0.1:6379/13")


def _binaries_or_skip() -> None:
    try:
        cluster.binaries()
    except RuntimeError as missing:
        if os.environ.get("CI"):
            raise  # CI runs these tests, never skips them
        pytest.skip(f"{missing} (CI installs PostgreSQL)")


@dataclass
class Cluster:
    primary: cluster.Postgres
    replica: cluster.Postgres
    database: str
    keys: dict[str, str]

    def on_replica(self, statement: str) -> str:
        return self.replica.sql(statement, self.database)


@pytest.fixture(scope="module")
def pair() -> Iterator[Cluster]:
    _binaries_or_skip()
    root = Path(tempfile.mkdtemp(prefix="replica-test-"))
    primary = cluster.start_primary(root)
    replica = None
    try:
        primary.sql("CREATE DATABASE memory_layer")
        url = primary.url("memory_layer")
        made = manage(
            "from django.core.management import call_command\n"
            "call_command('migrate', verbosity=0)\n"
            "from memories import services\n"
            "for slug in ('writer', 'reader'):\n"
            "    project = services.project_create(name=slug, slug=slug)\n"
            "    key, token = services.api_key_create(project=project, name='agent')\n"
            "    print(slug, token)\n",
            DATABASE_URL=url,
        )
        keys = dict(line.split(" ", 1) for line in made.splitlines()[-2:])
        _seed_reader(url, keys)
        replica = cluster.start_replica(primary, root, delay_seconds=DELAY_SECONDS)
        cluster.wait_replayed(primary, replica)
        yield Cluster(primary, replica, "memory_layer", keys)
    finally:
        if replica is not None:
            replica.stop()
        primary.stop()
        shutil.rmtree(root, ignore_errors=True)


def _seed_reader(url: str, keys: dict[str, str]) -> None:
    """The reader's project holds memories before the replica is made: it never writes."""
    manage(
        "from memories import services\n"
        "from memories.actors import Actor\n"
        "from memories.models import Project\n"
        "project = Project.objects.get(slug='reader')\n"
        "for n in range(12):\n"
        "    services.memory_create(project=project, actor=Actor.system('seed'),\n"
        "        content=f'Reader fact {n}: the release train leaves on Tuesdays at {n}:00',\n"
        "        type='learning', source='human')\n",
        DATABASE_URL=url,
    )


@pytest.fixture(scope="module", params=["files", "redis-pool"])
def service(request: pytest.FixtureRequest, pair: Cluster) -> Iterator[tuple[Server, Cluster]]:
    env = {
        "DATABASE_URL": pair.primary.url(pair.database),
        "DATABASE_REPLICA_URLS": pair.replica.url(pair.database),
        "METRICS_TOKEN": METRICS_TOKEN,
        # Every context is assembled: each read reaches a database.
        "ASSEMBLY_CACHE_SECONDS": "0",
        "CACHE_URL": "",
        "API_SLOTS_URL": "",
        "MEMORY_USES_URL": "",
    }
    if request.param == "redis-pool":
        import redis

        redis.Redis.from_url(REDIS_URL).flushdb()
        env.update(CACHE_URL=REDIS_URL, DATABASE_POOL="true", DATABASE_POOL_MAX_SIZE="3")
    server = start_gunicorn(port=cluster.free_port(), workers=2, **env)
    try:
        yield server, pair
    finally:
        server.stop()


def _metrics(port: int) -> str:
    import urllib.request

    asked = urllib.request.Request(
        f"http://127.0.0.1:{port}/metrics", headers={"Authorization": f"Bearer {METRICS_TOKEN}"}
    )
    with urllib.request.urlopen(asked, timeout=30) as answer:
        return answer.read().decode()


def _reads(text: str) -> dict[str, float]:
    found = re.findall(r'^database_reading_requests_total\{database="([^"]+)"\} (\S+)$', text, re.M)
    return {database: float(value) for database, value in found}


def test_own_writes_are_read_at_once_though_the_replica_is_seconds_behind(service):
    server, pair = service
    token = pair.keys["writer"]
    for attempt in range(5):
        word = f"zephyr{uuid.uuid4().hex[:8]}"
        status, created = call(
            server.port,
            "POST",
            "/api/projects/writer/memories",
            {"content": f"Deploying {word} needs the staging VPN ({attempt})", "type": "learning"},
            token=token,
        )
        assert status == 201, created
        memory_id = created["id"]
        # The replica has not replayed the write yet: what follows was read on the primary.
        assert (
            pair.on_replica(f"SELECT count(*) FROM project_memories WHERE id = {memory_id}") == "0"
        )
        status, read = call(
            server.port, "GET", f"/api/projects/writer/memories/{memory_id}", token=token
        )
        assert status == 200, read
        assert word in read["content"]
        status, context = call(
            server.port,
            "POST",
            "/api/projects/writer/context",
            {"task": f"deploy {word} staging", "tokenBudget": 4000},
            token=token,
        )
        assert status == 200, context
        assert memory_id in [item["id"] for item in context["items"]]


def test_a_client_that_never_writes_reads_on_the_replica(service):
    server, pair = service
    token = pair.keys["reader"]
    before = _reads(_metrics(server.port))
    requests = 0
    for n in range(20):
        status, page = call(server.port, "GET", "/api/projects/reader/memories", token=token)
        assert status == 200
        assert len(page["memories"]) == 12
        status, context = call(
            server.port,
            "POST",
            "/api/projects/reader/context",
            {"task": f"when does the release train leave {n}", "tokenBudget": 500},
            token=token,
        )
        assert status == 200, context
        assert context["items"], context
        requests += 2
    after = _reads(_metrics(server.port))
    on_replica = after.get("replica_1", 0) - before.get("replica_1", 0)
    # The metrics request itself is a reading request too: at least the reader's half.
    assert on_replica >= requests / 2, (before, after)


def test_the_replicas_lag_is_exported(service):
    server, _ = service
    text = _metrics(server.port)
    assert 'database_replica_up{replica="replica_1"} 1.0' in text
    assert re.search(
        r'^database_replica_lag_seconds\{replica="replica_1"\} [0-9.e+-]+$', text, re.M
    )
    assert re.search(r'^database_replica_lag_bytes\{replica="replica_1"\} [0-9.e+-]+$', text, re.M)


def test_a_replica_stopped_under_reads_fails_none_of_them(service):
    server, pair = service
    token = pair.keys["reader"]
    answers: list[int] = []

    def read() -> None:
        for n in range(20):
            path = "/api/projects/reader/memories" if n % 2 else "/api/projects/reader/context"
            body = None if n % 2 else {"task": f"release train {n}", "tokenBudget": 300}
            status, _ = call(server.port, "GET" if n % 2 else "POST", path, body, token=token)
            answers.append(status)
            time.sleep(0.1)

    reader = threading.Thread(target=read)
    reader.start()
    while len(answers) < 5:
        time.sleep(0.05)
    pair.replica.stop()
    try:
        reader.join(timeout=120)
        assert answers == [200] * 20
        assert 'database_replica_up{replica="replica_1"} 0.0' in _metrics(server.port)
    finally:
        pair.replica.start()
        cluster.wait_replayed(pair.primary, pair.replica)


# ---- without a server ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("sql", "writes"),
    [
        ("INSERT INTO t VALUES (1)", True),
        ("  update t SET a = 1", True),
        ("DELETE FROM t", True),
        ("WITH x AS (SELECT 1) UPDATE t SET a = 1", True),
        ("WITH x AS (SELECT 1) SELECT * FROM x", False),
        ("SELECT * FROM t FOR UPDATE", False),
        ("SELECT pg_current_wal_lsn()", False),
    ],
)
def test_a_write_is_told_from_a_read(sql, writes):
    from memories.replicas import writes as told

    assert told(sql) is writes


def test_wal_positions_compare_as_numbers():
    from memories.replicas import lsn_number

    assert lsn_number("0/3000000") == 0x3000000
    assert lsn_number("1/0") > lsn_number("0/FFFFFFFF")
    assert lsn_number(None) is None


def _settings(**env: str) -> dict:
    import json
    import subprocess
    import sys

    code = (
        "import json, django, os\n"
        "os.environ['DJANGO_SETTINGS_MODULE'] = 'config.settings'\n"
        "django.setup()\n"
        "from django.conf import settings\n"
        "print(json.dumps({'databases': settings.DATABASES, 'routers': settings.DATABASE_ROUTERS,"
        " 'middleware': settings.MIDDLEWARE}, default=str))\n"
    )
    environment = {**os.environ, "DATABASE_URL": "postgres://postgres@127.0.0.1:5432/x"}
    environment.pop("DATABASE_REPLICA_URLS", None)
    environment.update(env)
    result = subprocess.run(
        [sys.executable, "-c", code], env=environment, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_without_replicas_nothing_routes_and_without_a_pool_connections_persist():
    found = _settings(DATABASE_POOL="false", DB_CONN_MAX_AGE="60")
    assert list(found["databases"]) == ["default"]
    assert found["routers"] == []
    assert not [name for name in found["middleware"] if "replicas" in name]
    default = found["databases"]["default"]
    assert default["CONN_MAX_AGE"] == 60
    assert "pool" not in default["OPTIONS"]


def test_replicas_and_the_pool_from_the_environment():
    found = _settings(
        DATABASE_REPLICA_URLS="postgres://a@127.0.0.1:1/x,postgres://b@127.0.0.1:2/x",
        DATABASE_POOL="true",
        DATABASE_POOL_MAX_SIZE="7",
        DATABASE_REPLICA_CONNECT_TIMEOUT="3",
    )
    assert list(found["databases"]) == ["default", "replica_1", "replica_2"]
    assert found["routers"] == ["memories.replicas.ReplicaRouter"]
    assert "memories.replicas.ReplicaReadsMiddleware" in found["middleware"]
    default, replica = found["databases"]["default"], found["databases"]["replica_2"]
    assert default["CONN_MAX_AGE"] == 0  # the pool keeps the connections
    assert default["OPTIONS"]["pool"]["max_size"] == 7
    assert replica["PORT"] == 2
    assert replica["OPTIONS"]["connect_timeout"] == 3
    assert replica["OPTIONS"]["pool"]["timeout"] == 3  # no long wait for a replica that is down
    assert replica["TEST"]["MIRROR"] == "default"
    assert "-c jit=off" in replica["OPTIONS"]["options"]


def test_an_answer_read_on_a_replica_behind_the_versions_write_is_not_cached(settings):
    """A version names the primary's position after the write that made it: an answer
    assembled on a replica that had not replayed it would be the memories from before."""
    from assembly import cache
    from memories import replicas

    settings.ASSEMBLY_CACHE_SECONDS = 60
    answer = cache.Answer(result=None, body=b"{}", given=[], prompt_hash="h")
    for seen, stored in [(100, False), (200, True)]:
        digest = f"replica-test-{seen}"
        lookup = cache.Lookup(None, ("a1b2@150", "c3d4"))
        with replicas.reading_scope(1) as scope:
            scope.alias = "replica_1"
            scope.checked["replica_1"] = (seen, 0.0)
            cache.put(1, digest, lookup, answer, 60)
        raw = cache.caches[cache.CACHE_ALIAS].get(cache._entry_key(1, digest))
        assert (raw is not None) is stored
