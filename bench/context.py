"""Benchmark POST /api/projects/:id/context over HTTP on loopback against gunicorn.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/memory_bench \\
        .venv/bin/python bench/context.py --sizes 10000,100000 --seconds 20

Seed first with bench/seed.py. For each size it measures cache off and cache on:
p50, p95, p99 (ms) and requests per second over several rounds (the machine is noisy), and
prints the median of each figure as a Markdown table.

``--users N`` gives N users five preferences each in every project measured, and measures
each case twice in the same round: without a user, and with each request naming one of them
(the ``## Preferences`` section before the memories).

``--urls`` measures servers already running instead (bench/cluster.py up), each request
sent to the next of the URLs in turn (round-robin, per request); give it more than once to
compare sets of servers, measured in turn in every round:

    DATABASE_URL=<the cluster's primary> DATABASE_REPLICA_URLS=<its replica> \\
    METRICS_TOKEN=<the servers'> .venv/bin/python bench/context.py --sizes 10000 \\
        --urls http://127.0.0.1:8001 --urls http://127.0.0.1:8001,http://127.0.0.1:8002

The servers' settings then decide the cache (and everything else): each figure is measured
as served. DATABASE_URL is where the bench finds the project ``bench-<size>`` (seeded by
``up --seed``) and makes its API key. With METRICS_TOKEN, the servers' reading requests by
the database that answered them (``database_reading_requests_total`` on /metrics, added up
over the URLs, taken before and after each run) give the share of reads on the replicas.
"""

from __future__ import annotations

import argparse
import http.client
import itertools
import json
import os
import random
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections import Counter
from pathlib import Path
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from bench.seed import FILES, INTENTS, areas  # noqa: E402

PORT = int(os.environ.get("BENCH_PORT", "8799"))


# The assembly cache and the uses buffer in Redis, as in production (the server inherits it).
os.environ.setdefault("CACHE_URL", "redis://127.0.0.1:6379/15")


def django_setup() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django

    django.setup()


class UsesFlusher(threading.Thread):
    """Plays the beat's flush of noted uses (memories.services.uses) while the load runs, so
    its cost to the database is in the figures."""

    def __init__(self) -> None:
        super().__init__(daemon=True)
        self.stopped = threading.Event()

    def run(self) -> None:
        from django.conf import settings
        from django.db import connection

        from memories.services import uses

        while not self.stopped.wait(settings.MEMORY_USES_FLUSH_SECONDS):
            uses.flush()
        uses.flush()
        connection.close()

    def stop(self) -> None:
        self.stopped.set()
        self.join()


def database_settings() -> str:
    """What the figures depend on: the server's shared buffers, after loading the memories
    table and its indexes into them when pg_prewarm is available (steady state, not the
    first minutes after a restart), on the primary and on every replica the bench's own
    settings name (DATABASE_REPLICA_URLS)."""
    from django.db import DEFAULT_DB_ALIAS, connections

    for alias in connections:
        with connections[alias].cursor() as cursor:
            if alias == DEFAULT_DB_ALIAS:
                cursor.execute(
                    "SELECT count(*) FROM pg_available_extensions WHERE name = 'pg_prewarm'"
                )
                if cursor.fetchone()[0]:
                    cursor.execute("CREATE EXTENSION IF NOT EXISTS pg_prewarm")
            # A replica has the extension once it has replayed its creation.
            for _ in range(50 if alias != DEFAULT_DB_ALIAS else 1):
                cursor.execute("SELECT count(*) FROM pg_extension WHERE extname = 'pg_prewarm'")
                if found := cursor.fetchone()[0]:
                    break
                time.sleep(0.1)
            if found:
                cursor.execute(
                    "SELECT sum(pg_prewarm(indexrelid)) FROM pg_index"
                    " WHERE indrelid = 'project_memories'::regclass"
                )
                cursor.execute("SELECT pg_prewarm('project_memories')")
    with connections[DEFAULT_DB_ALIAS].cursor() as cursor:
        cursor.execute("SHOW shared_buffers")
        buffers = cursor.fetchone()[0]
        cursor.execute("SELECT pg_size_pretty(pg_total_relation_size('project_memories'))")
        size = cursor.fetchone()[0]
    return f"shared_buffers {buffers}; memories table with indexes {size}"


def api_key(size: int) -> str:
    from memories import services
    from memories.models import Project

    project = Project.objects.get(slug=f"bench-{size}")
    return services.api_key_create(project=project, name=f"bench-{time.time_ns()}")[1]


def start_server(workers: int, cache_seconds: int) -> subprocess.Popen:
    env = {
        **os.environ,
        "DEBUG": "false",
        "SECRET_KEY": "benchmark-only-secret-key-0123456789abcdefghijklmnop",
        "ALLOWED_HOSTS": "127.0.0.1",
        # Plain HTTP on loopback: in production a TLS proxy sits in front.
        "SECURE_SSL_REDIRECT": "false",
        "API_THROTTLE_RATE": "100000000/min",
        "ASSEMBLY_CACHE_SECONDS": str(cache_seconds),
        # Every agent of the load shares one key: it may have that many requests at once.
        "API_KEY_CONCURRENCY": os.environ.get("API_KEY_CONCURRENCY", "64"),
        "LOG_LEVEL": "WARNING",
        "DB_CONN_MAX_AGE": "600",
    }
    server = subprocess.Popen(
        [sys.executable, "-m", "gunicorn", "-c", "config/gunicorn.conf.py", "config.wsgi",
         "--workers", str(workers),
         "--bind", f"127.0.0.1:{PORT}", "--log-level", "warning"],
        cwd=ROOT, env=env, start_new_session=True,
    )  # fmt: skip
    for _ in range(100):
        try:
            connection = http.client.HTTPConnection("127.0.0.1", PORT, timeout=1)
            connection.request("GET", "/api/schema/")
            connection.getresponse().read()
            return server
        except OSError:
            time.sleep(0.1)
    raise RuntimeError("gunicorn did not start")


def stop_server(server: subprocess.Popen) -> None:
    os.killpg(server.pid, signal.SIGTERM)
    server.wait(timeout=30)


def request_body(rng: random.Random, names: list[str], repeat: bool, users: int = 0) -> bytes:
    if repeat:  # cache on: agents asking again for the same task
        rng = random.Random(rng.randint(0, 9))
    area = rng.choice(names)
    body = {
        "writeScope": [f"src/{area}/{rng.choice(FILES)}.py"],
        "intent": rng.choice(INTENTS),
        "tokenBudget": 2000,
        "responseReserve": 500,
    }
    if users:
        body["userId"] = f"user-{rng.randrange(users)}"
    return json.dumps(body).encode()


PREFERENCES = [
    ("language", "de", "style"),
    ("answer.length", {"max_sentences": 4}, "style"),
    ("tests", "pytest -x before every commit", "tools"),
    ("editor", {"name": "vim", "tabs": False}, "tools"),
    ("review", "small pull requests, one change each", "process"),
]


def seed_users(size: int, users: int) -> None:
    """Five preferences for each of ``users`` users of the project (replaced if there)."""
    from memories.models import Project
    from people.models import Preference

    project = Project.objects.get(slug=f"bench-{size}")
    Preference.objects.filter(project=project).delete()
    Preference.objects.bulk_create(
        Preference(
            project=project,
            user_ref=f"user-{n}",
            key=key,
            value=value,
            category=category,
            updated_by="bench",
        )
        for n in range(users)
        for key, value, category in PREFERENCES
    )


# Several agents at once are played by wrk when it is installed (C, event-driven): it needs
# far less CPU than Python threads, and on 2 cores the generator competes with the server
# for every cycle. One agent is played by Python, one request at a time: its per-request
# timings are exact, where wrk's tails on this machine showed stalls no server log had.
WRK_SCRIPT = """
local bodies = {%(bodies)s}
local threads = {}
local counter = 0
function setup(thread)
  thread:set("offset", counter * 7919)
  counter = counter + 1
  table.insert(threads, thread)
end
function init(args)
  errors = 0
  timeouts = 0
  position = offset
end
function request()
  position = position + 1
  return wrk.format("POST", "%(path)s", {
    ["Authorization"] = "Bearer %(token)s", ["Content-Type"] = "application/json"
  }, bodies[position %% #bodies + 1])
end
function response(status, headers, body)
  if status ~= 200 then errors = errors + 1 end
  if string.find(body, "SOURCE_TIMEOUT", 1, true) then timeouts = timeouts + 1 end
end
function done(summary, latency, requests)
  local failed, late = 0, 0
  for _, thread in ipairs(threads) do
    failed = failed + thread:get("errors")
    late = late + thread:get("timeouts")
  end
  io.write(string.format("RESULT %%d %%d %%d %%f %%f %%f %%f\\n", summary.requests, failed,
    late, latency:percentile(50), latency:percentile(95), latency:percentile(99),
    summary.duration))
end
"""


def load_wrk(size: int, token: str, seconds: float, concurrency: int, repeat: bool) -> dict:
    rng = random.Random(concurrency)
    names = areas(size)
    bodies = [request_body(rng, names, repeat).decode() for _ in range(2000)]
    script = WRK_SCRIPT % {
        "bodies": ",\n".join(f"[==[{body}]==]" for body in bodies),
        "path": f"/api/projects/bench-{size}/context",
        "token": token,
    }
    with tempfile.NamedTemporaryFile("w", suffix=".lua") as file:
        file.write(script)
        file.flush()
        output = subprocess.run(
            ["wrk", "-t", str(min(2, concurrency)), "-c", str(concurrency),
             "-d", f"{max(1, round(seconds))}s", "--timeout", "30s", "-s", file.name,
             f"http://127.0.0.1:{PORT}/"],
            capture_output=True, text=True, check=True,
        ).stdout  # fmt: skip
    fields = next(line for line in output.splitlines() if line.startswith("RESULT")).split()[1:]
    requests, errors, timeouts = (int(value) for value in fields[:3])
    p50, p95, p99, duration = (float(value) for value in fields[3:])
    return {
        "requests": requests,
        "errors": errors,
        "timeouts": timeouts,
        "p50": p50 / 1000,
        "p95": p95 / 1000,
        "p99": p99 / 1000,
        "rps": requests / (duration / 1_000_000),
    }


def generator(concurrency: int, served: bool = False) -> str:
    """wrk sends to one server: servers already running (``--urls``), which may be several,
    are loaded from Python, whatever their number, so that one and two compare."""
    return "wrk" if concurrency > 1 and not served and shutil.which("wrk") else "python"


def memory_ids(size: int, count: int = 2000) -> list[int]:
    """Ids of the project's memories, to read one at a time."""
    from memories.models import Memory

    return list(
        Memory.objects.filter(project__slug=f"bench-{size}")
        .order_by("?")
        .values_list("id", flat=True)[:count]
    )


def load(
    size: int,
    token: str,
    seconds: float,
    concurrency: int,
    repeat: bool,
    ids: list[int] | None = None,
    users: int = 0,
    servers: list[tuple[str, int]] | None = None,
) -> dict:
    """Agents asking for context for ``seconds``. One agent alone (``ids`` given) also reads
    one memory by id after each request, so that the two are measured side by side in the
    same moments of the machine; each answer's tokens are checked against its budget.

    ``servers`` (host, port) already running take the requests in turn, one request each
    (round-robin over all the agents' requests); by default the bench's own server."""
    if servers is None and generator(concurrency) == "wrk" and not users:
        return load_wrk(size, token, seconds, concurrency, repeat)
    targets = servers or [("127.0.0.1", PORT)]
    turn = itertools.count()  # shared by the agents' threads (its next() is atomic)
    names = areas(size)
    latencies: list[float] = []
    reads: list[float] = []
    errors = 0
    throttled = 0
    timeouts = 0
    overruns = 0
    lock = threading.Lock()
    deadline = time.perf_counter() + seconds

    def agent(seed: int) -> None:
        nonlocal errors, throttled, timeouts, overruns
        rng = random.Random(seed)
        # A kept-alive connection to each server.
        connections = [http.client.HTTPConnection(h, p, timeout=30) for h, p in targets]
        headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
        mine: list[float] = []
        read: list[float] = []
        failed = 0
        limited = 0
        late = 0
        over = 0
        while time.perf_counter() < deadline:
            body = request_body(rng, names, repeat, users)
            connection = connections[next(turn) % len(connections)]
            started = time.perf_counter()
            connection.request("POST", f"/api/projects/bench-{size}/context", body, headers)
            response = connection.getresponse()
            payload = response.read()
            mine.append((time.perf_counter() - started) * 1000)
            failed += response.status != 200
            limited += response.status == 429
            # A source cut off by its deadline answers fast but incomplete: count it.
            late += b"SOURCE_TIMEOUT" in payload
            if response.status == 200:
                asked = json.loads(body)
                metadata = json.loads(payload)["metadata"]
                over += metadata["totalTokens"] > asked["tokenBudget"] - asked["responseReserve"]
            if ids:
                path = f"/api/projects/bench-{size}/memories/{rng.choice(ids)}"
                connection = connections[next(turn) % len(connections)]
                started = time.perf_counter()
                connection.request("GET", path, headers=headers)
                answer = connection.getresponse()
                answer.read()
                read.append((time.perf_counter() - started) * 1000)
                failed += answer.status != 200
        for each in connections:
            each.close()
        with lock:
            latencies.extend(mine)
            reads.extend(read)
            errors += failed
            throttled += limited
            timeouts += late
            overruns += over

    started = time.perf_counter()
    threads = [threading.Thread(target=agent, args=(i,)) for i in range(concurrency)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    elapsed = time.perf_counter() - started
    # A warm-up on a slow machine may see a single answer: quantiles need two.
    cuts = statistics.quantiles(latencies * 2 if len(latencies) == 1 else latencies, n=100)
    result = {
        "requests": len(latencies),
        "errors": errors,
        "throttled": throttled,
        "timeouts": timeouts,
        "overruns": overruns,
        "p50": statistics.median(latencies),
        "p95": cuts[94],
        "p99": cuts[98],
        "rps": len(latencies) / elapsed,
    }
    if reads:
        result["read_p50"] = statistics.median(reads)
        result["ratio"] = result["p50"] / result["read_p50"]
    return result


READS_LINE = re.compile(r'^database_reading_requests_total\{database="([^"]+)"\} (\S+)$', re.M)


THROTTLED = (
    "the servers limit each key's requests; start them with API_THROTTLE_RATE=100000000/min"
    " API_KEY_CONCURRENCY=64 in the environment (of bench/cluster.py up)"
)


def servers_of(urls: str) -> list[tuple[str, int]]:
    """``http://127.0.0.1:8001,http://127.0.0.1:8002`` as (host, port) pairs."""
    found = []
    for url in urls.split(","):
        parts = urlsplit(url.strip())
        if parts.scheme != "http" or not parts.hostname:
            raise SystemExit(f"{url!r}: give http://host:port")
        found.append((parts.hostname, parts.port or 80))
    return found


def reads_by_database(servers: list[tuple[str, int]], token: str) -> Counter[str]:
    """The servers' reading requests so far, by the database that answered them, added up."""
    total: Counter[str] = Counter()
    for host, port in servers:
        asked = urllib.request.Request(
            f"http://{host}:{port}/metrics", headers={"Authorization": f"Bearer {token}"}
        )
        with urllib.request.urlopen(asked, timeout=30) as answer:
            text = answer.read().decode()
        for database, value in READS_LINE.findall(text):
            total[database] += float(value)
    return total


def check_served(servers: list[tuple[str, int]], size: int, token: str) -> None:
    """Each server answers the bench's key for its project (a replica may take a moment to
    replay the key), or the bench stops and says why."""
    body = request_body(random.Random(0), areas(size), repeat=False)
    for host, port in servers:
        for _ in range(50):
            connection = http.client.HTTPConnection(host, port, timeout=30)
            headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
            connection.request("POST", f"/api/projects/bench-{size}/context", body, headers)
            status = connection.getresponse().status
            connection.close()
            if status == 200:
                break
            time.sleep(0.2)
        else:
            raise SystemExit(
                f"http://{host}:{port} answered {status} for bench-{size}: "
                + (
                    THROTTLED
                    if status == 429
                    else "DATABASE_URL must be the servers' primary (bench/cluster.py up prints"
                    " it), with the project seeded there (up --seed)"
                )
            )


def measure_served(args: argparse.Namespace) -> None:
    """The ``--urls`` sets of running servers, one after the other in every round."""
    sets = [servers_of(urls) for urls in args.urls]
    sizes = [int(s) for s in args.sizes.split(",")]
    metrics_token = os.environ.get("METRICS_TOKEN", "")
    if args.users:
        for size in sizes:
            seed_users(size, args.users)
    variants = [0, args.users] if args.users else [0]
    described = database_settings()
    keys = {size: api_key(size) for size in sizes}
    for servers in sets:
        for size in sizes:
            check_served(servers, size, keys[size])
    runs: dict[tuple[int, int, int, int], list[dict]] = {}
    for _ in range(args.rounds):
        for number, servers in enumerate(sets):
            for size in sizes:
                ids = memory_ids(size)
                for agents in (int(c) for c in args.concurrency.split(",")):
                    alone = ids if agents == 1 else None
                    for users in variants:
                        load(size, keys[size], 2, agents, False, alone, users, servers)  # warm up
                        before = (
                            reads_by_database(servers, metrics_token) if metrics_token else None
                        )
                        result = load(
                            size, keys[size], args.seconds, agents, False, alone, users, servers
                        )
                        if before is not None:
                            after = reads_by_database(servers, metrics_token)
                            result["reads"] = after - before
                        runs.setdefault((number, size, agents, users), []).append(result)
    print(
        f"Servers already running (--urls), each request to the next in turn; PostgreSQL:"
        f" {described}; median of {args.rounds} rounds of {args.seconds:g} s, the sets of"
        " servers measured one after the other in each round."
    )
    print(
        "Cache: as served (the servers' settings decide it, ASSEMBLY_CACHE_SECONDS). Reads on"
        " the primary and on replicas: the servers' reading requests by the database that"
        " answered them (/metrics), over the measured runs; answered with no read (a cached"
        " context, /metrics itself) left out."
    )
    print(
        "| memories | servers | cache | agents | load from | requests | errors | 429s "
        "| source timeouts | token overruns | p50 ms | p95 ms | p99 ms | req/s "
        "| reads on primary | reads on replicas | on replicas |"
    )
    print("|---:|---|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for (number, size, agents, users), results in runs.items():
        r = {
            name: statistics.median(run[name] for run in results)
            for name in ("p50", "p95", "p99", "rps")
        }
        totals = {
            name: sum(run.get(name, 0) for run in results)
            for name in ("requests", "errors", "throttled", "timeouts", "overruns")
        }
        reads: Counter[str] = sum((run.get("reads", Counter()) for run in results), Counter())
        primary = reads["default"]
        replicas = sum(value for name, value in reads.items() if name.startswith("replica_"))
        share = f"{replicas / (primary + replicas):.1%}" if primary + replicas else "n/a"
        if not metrics_token:
            primary_text = replicas_text = share = "n/a (no METRICS_TOKEN)"
        else:
            primary_text, replicas_text = f"{primary:.0f}", f"{replicas:.0f}"
        named = ",".join(str(port) for _, port in sets[number])
        cache = "as served, user" if users else "as served"
        print(
            f"| {size:,} | {named} | {cache} | {agents} | {generator(agents, served=True)} "
            f"| {totals['requests']} | {totals['errors']} | {totals['throttled']} "
            f"| {totals['timeouts']} | {totals['overruns']} | {r['p50']:.1f} | {r['p95']:.1f} "
            f"| {r['p99']:.1f} | {r['rps']:.0f} | {primary_text} | {replicas_text} | {share} |"
        )
    if any(run.get("throttled") for results in runs.values() for run in results):
        print(f"429s: {THROTTLED}")


def own_servers(args: argparse.Namespace) -> None:
    """The bench's own gunicorn, started for each cache setting in every round."""
    if args.users:
        for size in (int(s) for s in args.sizes.split(",")):
            seed_users(size, args.users)
    variants = [0, args.users] if args.users else [0]
    described = database_settings()
    runs: dict[tuple[int, str, int], list[dict]] = {}
    flusher = UsesFlusher()
    flusher.start()
    try:
        for _ in range(args.rounds):
            for cache_seconds, label in [(0, "off"), (300, "on")]:
                os.environ["ASSEMBLY_TIME_BUDGET_MS"] = str(args.time_budget_ms)
                server = start_server(args.workers, cache_seconds)
                try:
                    for size in (int(s) for s in args.sizes.split(",")):
                        token = api_key(size)
                        ids = memory_ids(size)
                        for agents in (int(c) for c in args.concurrency.split(",")):
                            alone = ids if agents == 1 else None
                            for users in variants:
                                repeat = cache_seconds > 0
                                load(size, token, 2, agents, repeat, alone, users)  # warm up
                                result = load(
                                    size, token, args.seconds, agents, repeat, alone, users
                                )
                                named = f"{label}, user" if users else label
                                runs.setdefault((size, named, agents), []).append(result)
                finally:
                    stop_server(server)
    finally:
        flusher.stop()
    print(
        f"PostgreSQL: {described}; {args.workers} gunicorn workers;"
        f" median of {args.rounds} rounds of {args.seconds:g} s"
    )
    print(
        "One agent alone also reads one memory by id after each request: its p50, and the"
        " context's p50 over it, taken in the same moments (a ratio holds on any machine)."
    )
    print(
        "| memories | cache | agents | load from | requests | errors | source timeouts "
        "| token overruns | p50 ms | p95 ms | p99 ms | req/s | one memory p50 ms | p50 ratio |"
    )
    print("|---:|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for (size, label, agents), results in runs.items():
        r = {name: statistics.median(run[name] for run in results) for name in results[0]}
        # Requests, errors, timeouts and overruns are totals over the rounds.
        totals = {
            name: sum(run.get(name, 0) for run in results)
            for name in ("requests", "errors", "timeouts", "overruns")
        }
        alone = f"{r['read_p50']:.1f} | {r['ratio']:.2f}x" if "read_p50" in r else "n/a | n/a"
        print(
            f"| {size:,} | {label} | {agents} | {generator(agents)} | {totals['requests']} "
            f"| {totals['errors']} | {totals['timeouts']} | {totals['overruns']} | "
            f"{r['p50']:.1f} | {r['p95']:.1f} | {r['p99']:.1f} | {r['rps']:.0f} | {alone} |"
        )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--seconds", type=float, default=20)
    parser.add_argument(
        "--concurrency",
        default="1,8",
        help="agents at once, comma-separated: 1 shows latency alone, more the throughput",
    )
    parser.add_argument(
        "--workers", type=int, default=4, help="the bench's own server's (not with --urls)"
    )
    parser.add_argument(
        "--time-budget-ms",
        type=int,
        default=500,
        help="the bench's own server's ASSEMBLY_TIME_BUDGET_MS (not with --urls)",
    )
    parser.add_argument(
        "--rounds", type=int, default=3, help="each figure is the median of this many rounds"
    )
    parser.add_argument(
        "--users",
        type=int,
        default=0,
        help="also measure requests that name one of this many users (five preferences each)",
    )
    parser.add_argument(
        "--urls",
        action="append",
        metavar="URL[,URL...]",
        help="measure servers already running, requests round-robin over these base URLs"
        " (no server of the bench's own); again to compare another set",
    )
    args = parser.parse_args()
    django_setup()
    if args.urls:
        measure_served(args)
    else:
        own_servers(args)


if __name__ == "__main__":
    main()
