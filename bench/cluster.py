"""PostgreSQL servers of one's own on this machine: a primary and its streaming replicas,
each in a folder with a port, started with the machine's binaries (or the embedded
server's), and the whole service over them.

    python bench/cluster.py up [--dir /tmp/memory-cluster] [--delay 0] [--seed N]

(``make cluster``) starts a primary (port 55432) and a streaming replica (55433, replaying
``--delay`` seconds late), migrates, seeds the demo project (and with ``--seed N`` a
benchmark project of N memories, ``bench-N``, as bench/seed.py does), then two web servers
(gunicorn on 8001 and 8002, ``--ports``, both reading on the replica), a Celery worker and
beat, and prints how to reach them. Ctrl-C or SIGTERM stops everything, and the PostgreSQL
servers; their data and logs stay in ``--dir`` until the next ``up`` there.

Every process gets the environment it was started with (CACHE_URL, ASSEMBLY_CACHE_SECONDS,
API_THROTTLE_RATE, ...), over the cluster's own DATABASE_URL, DATABASE_REPLICA_URLS and
VAR_DIR (``--dir``/var); the web servers get METRICS_TOKEN (the environment's, or a new one,
printed) for ``/metrics``. ``bench/context.py --urls`` measures the running servers.

The tests of read replicas (tests/ops/test_replicas.py) start the same PostgreSQL servers
with ``start_primary`` and ``start_replica``.
"""

from __future__ import annotations

import argparse
import glob
import os
import pwd
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from bench.server import Server

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


def binaries() -> Path:
    """The folder of initdb, pg_ctl and pg_basebackup: PG_BIN, the machine's PostgreSQL, or
    the embedded server's (the pgserver package)."""
    if os.environ.get("PG_BIN"):
        return Path(os.environ["PG_BIN"])
    found = shutil.which("pg_config")
    if found:
        bindir = subprocess.run([found, "--bindir"], capture_output=True, text=True).stdout
        if (Path(bindir.strip()) / "initdb").exists():
            return Path(bindir.strip())
    for folder in sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True):
        if (Path(folder) / "initdb").exists():
            return Path(folder)
    try:
        import pgserver

        folder = Path(pgserver.__file__).parent / "pginstall" / "bin"
        if (folder / "initdb").exists():
            return folder
    except ImportError:
        pass
    raise RuntimeError("No PostgreSQL binaries (initdb, pg_ctl, pg_basebackup): set PG_BIN")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _as_owner(command: list[str]) -> list[str]:
    """PostgreSQL refuses to run as root: as root, run it as the ``postgres`` user."""
    if os.geteuid() != 0:
        return command
    try:
        pwd.getpwnam("postgres")
    except KeyError:
        raise RuntimeError("Running as root needs a 'postgres' user for PostgreSQL") from None
    return ["runuser", "-u", "postgres", "--", *command]


def _run(command: list[str], timeout: float = 120) -> None:
    result = subprocess.run(_as_owner(command), capture_output=True, text=True, timeout=timeout)
    if result.returncode:
        raise RuntimeError(f"{' '.join(command)} failed:\n{result.stdout}{result.stderr}")


def _own(folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    if os.geteuid() == 0:
        entry = pwd.getpwnam("postgres")
        os.chown(folder, entry.pw_uid, entry.pw_gid)
        folder.chmod(0o700)


@dataclass
class Postgres:
    """One server: its data folder and port."""

    folder: Path
    port: int

    def url(self, database: str) -> str:
        return f"postgres://postgres@127.0.0.1:{self.port}/{database}"

    def start(self) -> None:
        log = self.folder.parent / f"{self.folder.name}.log"
        if os.geteuid() == 0:
            log.touch()
            shutil.chown(log, "postgres")
        _run([str(binaries() / "pg_ctl"), "-D", str(self.folder), "-l", str(log), "-w", "start"])

    def stop(self) -> None:
        if (self.folder / "postmaster.pid").exists():
            _run([str(binaries() / "pg_ctl"), "-D", str(self.folder), "-m", "fast", "-w", "stop"])

    def sql(self, statement: str, database: str = "postgres") -> str:
        import psycopg

        with psycopg.connect(self.url(database), autocommit=True, connect_timeout=5) as conn:
            cursor = conn.execute(statement)
            row = cursor.fetchone() if cursor.description else None
        return "" if row is None or row[0] is None else str(row[0])


def _settings(folder: Path, port: int, extra: dict[str, str]) -> None:
    lines = {
        "port": str(port),
        "listen_addresses": "'127.0.0.1'",
        "unix_socket_directories": f"'{folder}'",
        "fsync": "off",  # a server for tests and benchmarks on one machine
        **extra,
    }
    with open(folder / "postgresql.auto.conf", "a", encoding="utf-8") as conf:
        conf.writelines(f"{name} = {value}\n" for name, value in lines.items())


def start_primary(root: Path, port: int | None = None) -> Postgres:
    """A new primary in ``root``/primary, accepting replication from loopback."""
    folder = root / "primary"
    _own(root)
    _own(folder)
    _run([str(binaries() / "initdb"), "-D", str(folder), "-U", "postgres", "-A", "trust"])
    server = Postgres(folder, port or free_port())
    _settings(folder, server.port, {"wal_level": "replica", "max_wal_senders": "10"})
    server.start()
    return server


def start_replica(primary: Postgres, root: Path, *, port: int | None = None,
                  delay_seconds: float = 0, name: str = "replica") -> Postgres:  # fmt: skip
    """A streaming replica of ``primary`` (a base backup, then the WAL as it is written),
    replaying ``delay_seconds`` late."""
    folder = root / name
    _own(folder)
    _run([str(binaries() / "pg_basebackup"), "-h", "127.0.0.1", "-p", str(primary.port),
          "-U", "postgres", "-D", str(folder), "-R", "-X", "stream", "-c", "fast"])  # fmt: skip
    server = Postgres(folder, port or free_port())
    extra = {"hot_standby": "on"}
    if delay_seconds:
        extra["recovery_min_apply_delay"] = f"'{int(delay_seconds * 1000)}ms'"
    _settings(folder, server.port, extra)
    server.start()
    return server


def wait_replayed(primary: Postgres, replica: Postgres, timeout: float = 60) -> None:
    """Until the replica has replayed everything the primary has written so far."""
    target = primary.sql("SELECT pg_current_wal_lsn()")
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        done = replica.sql(f"SELECT pg_last_wal_replay_lsn() >= '{target}'::pg_lsn")
        if done == "True":
            return
        time.sleep(0.1)
    raise RuntimeError("The replica did not catch up")


PRIMARY_PORT = 55432
REPLICA_PORT = 55433
# How long the worker, beat and web servers have to stop before they are killed.
STOP_SECONDS = 30


def _manage(*args: str, env: dict[str, str]) -> None:
    subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env=env, check=True)


def _interrupt(*_: object) -> None:
    raise KeyboardInterrupt


def _port_free(port: int) -> bool:
    """Nothing listens on the port (connections of an earlier server closing do not count:
    the servers bind with SO_REUSEADDR, as this probe does)."""
    with socket.socket() as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def _check_ports(ports: tuple[int, ...], what: str) -> None:
    busy = [str(port) for port in ports if not _port_free(port)]
    if busy:
        raise SystemExit(f"{', '.join(busy)}: already in use; {what} must be free")


def _stop_servers(folder: Path) -> None:
    """Stop the PostgreSQL servers whose data folders are in ``folder`` (a cluster stopped
    halfway, or left by one that was killed)."""
    for name in ("replica", "primary"):
        try:
            Postgres(folder / name, 0).stop()
        except (OSError, RuntimeError, subprocess.SubprocessError) as failed:
            print(f"{name}: {failed}", file=sys.stderr)


def _stop_process(process: subprocess.Popen) -> None:
    """SIGTERM to the process alone (a Celery worker stops its own pool; signalled with it,
    the pool's processes die under the worker, which then hangs), then SIGKILL to its
    process group if it has not stopped within STOP_SECONDS, and to whatever it left."""
    with suppress(ProcessLookupError):
        process.send_signal(signal.SIGTERM)
    try:
        process.wait(timeout=STOP_SECONDS)
    except subprocess.TimeoutExpired:
        print(f"pid {process.pid} did not stop: killed", file=sys.stderr)
    with suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
    process.wait()


def up(
    folder: Path, delay: float, ports: tuple[int, ...], *, seed: int = 0, workers: int = 2
) -> None:
    """The whole service over a primary and a replica, until Ctrl-C or SIGTERM."""
    from bench.server import SECRET_KEY, start_gunicorn

    # Ctrl-C and SIGTERM stop everything, whenever they come (startup too). SIGINT is set
    # explicitly: a shell that starts a command in the background makes it ignore SIGINT.
    for number in (signal.SIGINT, signal.SIGTERM):
        signal.signal(number, _interrupt)
    _check_ports(ports, "the web servers' ports (--ports)")
    if folder.exists():  # of an earlier cluster: its web servers are gone, as the check says
        _stop_servers(folder)
        shutil.rmtree(folder)
    _check_ports((PRIMARY_PORT, REPLICA_PORT), "PostgreSQL's ports")
    token = os.environ.get("METRICS_TOKEN") or secrets.token_urlsafe(24)
    started: list[subprocess.Popen] = []
    servers: list[Server] = []
    try:
        primary = start_primary(folder, PRIMARY_PORT)
        primary.sql("CREATE DATABASE memory_layer")
        url = primary.url("memory_layer")
        replica = start_replica(primary, folder, port=REPLICA_PORT, delay_seconds=delay)
        # One VAR_DIR for every process: the file-system broker (without CELERY_BROKER_URL)
        # and, without Redis (CACHE_URL), the caches, and with them what each caller wrote
        # last, are files there.
        env = {
            **os.environ,
            "DATABASE_URL": url,
            "DATABASE_REPLICA_URLS": replica.url("memory_layer"),
            "VAR_DIR": str(folder / "var"),
            "METRICS_TOKEN": token,
        }
        _manage("migrate", "--noinput", env=env)
        _manage("seed_demo", env=env)
        if seed:
            subprocess.run(
                [sys.executable, "bench/seed.py", str(seed)], cwd=ROOT, env=env, check=True
            )
        # With DEBUG off (as the web servers run), the pages' files are served from here.
        _manage(
            "collectstatic", "--noinput", "--verbosity", "0",
            env={**env, "DEBUG": "false", "SECRET_KEY": SECRET_KEY},
        )  # fmt: skip
        wait_replayed(primary, replica, timeout=delay + 60)
        web = {name: env[name] for name in ("DATABASE_URL", "DATABASE_REPLICA_URLS", "VAR_DIR")}
        web["METRICS_TOKEN"] = token
        # Plain HTTP on loopback: the sign-in and CSRF cookies travel without TLS.
        web["SESSION_COOKIE_SECURE"] = web["CSRF_COOKIE_SECURE"] = "false"
        for port in ports:
            # Each server's own metrics: gunicorn empties this folder when it starts, and
            # /metrics adds up every worker that wrote there.
            metrics = str(folder / "var" / f"metrics-{port}")
            servers.append(
                start_gunicorn(port=port, workers=workers, PROMETHEUS_MULTIPROC_DIR=metrics, **web)
            )
        for role in ("worker", "beat"):
            started.append(
                subprocess.Popen(
                    [sys.executable, "-m", "celery", "-A", "config", role, "--loglevel", "WARNING"],
                    cwd=ROOT,
                    env=env,
                    start_new_session=True,
                )
            )
        urls = ",".join(f"http://127.0.0.1:{port}" for port in ports)
        print(f"primary   {url}")
        print(f"replica   {replica.url('memory_layer')} (replaying {delay:g} s late)")
        for port in ports:
            print(f"web       http://127.0.0.1:{port}/ ({workers} gunicorn workers)")
        print(f"metrics   /metrics of each, with 'Authorization: Bearer {token}'")
        print(f"files     {folder} (PostgreSQL's data and logs; VAR_DIR: var)")
        if seed:
            print(
                f"bench     DATABASE_URL={url} DATABASE_REPLICA_URLS={replica.url('memory_layer')}"
                f" METRICS_TOKEN={token} python bench/context.py --urls {urls} --sizes {seed}"
            )
        print("worker, beat running; Ctrl-C stops everything", flush=True)
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        pass
    finally:
        for number in (signal.SIGINT, signal.SIGTERM):
            signal.signal(number, signal.SIG_IGN)  # let the stop finish
        for process in started:
            _stop_process(process)
        for server in servers:
            server.stop()
        _stop_servers(folder)
        print("stopped", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("command", choices=["up"])
    parser.add_argument("--dir", type=Path, default=Path(tempfile.gettempdir()) / "memory-cluster")
    parser.add_argument("--delay", type=float, default=0, help="the replica's replay delay, s")
    parser.add_argument("--ports", default="8001,8002", help="the web servers' ports")
    parser.add_argument("--workers", type=int, default=2, help="gunicorn workers per server")
    parser.add_argument(
        "--seed",
        type=int,
        default=0,
        metavar="N",
        help="also seed a benchmark project of N memories (bench-N, bench/seed.py)",
    )
    args = parser.parse_args()
    ports = tuple(int(port) for port in args.ports.split(","))
    up(args.dir, args.delay, ports, seed=args.seed, workers=args.workers)


if __name__ == "__main__":
    main()
