"""PostgreSQL servers of one's own on this machine: a primary and its streaming replicas,
each in a folder with a port, started with the machine's binaries (or the embedded
server's), and the whole service over them.

    python bench/cluster.py up [--dir var/cluster] [--delay 0]

starts a primary (port 55432), a streaming replica (55433, replaying ``--delay`` seconds
late), migrates and seeds the demo project, then two web servers (gunicorn on 8001 and
8002, both reading on the replica), a Celery worker and beat, and prints how to reach them;
Ctrl-C stops everything. The tests of read replicas (tests/ops/test_replicas.py) start the
same servers with ``start_primary`` and ``start_replica``.
"""

from __future__ import annotations

import argparse
import glob
import os
import pwd
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

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


def _manage(*args: str, env: dict[str, str]) -> None:
    subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env=env, check=True)


def _interrupt(*_: object) -> None:
    raise KeyboardInterrupt


def up(folder: Path, delay: float, ports: tuple[int, int]) -> None:
    from bench.server import start_gunicorn

    if folder.exists():
        shutil.rmtree(folder)
    primary = start_primary(folder, 55432)
    started: list[subprocess.Popen] = []
    servers = []
    replica = None
    try:
        primary.sql("CREATE DATABASE memory_layer")
        url = primary.url("memory_layer")
        replica = start_replica(primary, folder, port=55433, delay_seconds=delay)
        env = {
            **os.environ,
            "DATABASE_URL": url,
            "DATABASE_REPLICA_URLS": replica.url("memory_layer"),
        }
        _manage("migrate", "--noinput", env=env)
        _manage("seed_demo", env=env)
        # Both web servers share one VAR_DIR: without Redis (CACHE_URL) the caches, and with
        # them what each caller wrote last, are files there.
        shared = {name: env[name] for name in ("DATABASE_URL", "DATABASE_REPLICA_URLS")}
        shared["VAR_DIR"] = str(folder / "var")
        servers.extend(start_gunicorn(port=port, workers=2, **shared) for port in ports)
        for role in ("worker", "beat"):
            started.append(
                subprocess.Popen(
                    [sys.executable, "-m", "celery", "-A", "config", role, "--loglevel", "WARNING"],
                    cwd=ROOT,
                    env=env,
                    start_new_session=True,
                )
            )
        print(f"primary   {url}")
        print(f"replica   {replica.url('memory_layer')} (replaying {delay:g} s late)")
        for port in ports:
            print(f"web       http://127.0.0.1:{port}/")
        print("worker, beat running; Ctrl-C stops everything", flush=True)
        signal.signal(signal.SIGTERM, _interrupt)
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        pass
    finally:
        for process in started:
            os.killpg(process.pid, signal.SIGTERM)
        for server in servers:
            server.stop()
        if replica is not None:
            replica.stop()
        primary.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("command", choices=["up"])
    parser.add_argument("--dir", type=Path, default=Path(tempfile.gettempdir()) / "memory-cluster")
    parser.add_argument("--delay", type=float, default=0, help="the replica's replay delay, s")
    parser.add_argument("--ports", default="8001,8002", help="the web servers' ports")
    args = parser.parse_args()
    first, second = (int(port) for port in args.ports.split(","))
    up(args.dir, args.delay, (first, second))


if __name__ == "__main__":
    main()
