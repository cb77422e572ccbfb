"""What the contention and soak benchmarks share: a fresh database, gunicorn started and
stopped, HTTP calls on loopback, and the lines PostgreSQL logged for one database meanwhile.
"""

from __future__ import annotations

import glob
import http.client
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# DEBUG is off in the benchmarks' servers, which then want a long secret key.
SECRET_KEY = "benchmark-only-secret-key-0123456789abcdefghijklmnop"
PG_LOG = os.environ.get("PG_LOG", "")


def fresh_database(name: str) -> str:
    """Database ``name`` made afresh beside DATABASE_URL's, and its URL (also set as
    DATABASE_URL, before Django is set up)."""
    import psycopg
    from psycopg import sql

    base = os.environ["DATABASE_URL"].rsplit("/", 1)[0]
    with psycopg.connect(base + "/postgres", autocommit=True) as connection:
        connection.execute(
            sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
        )
        connection.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    os.environ["DATABASE_URL"] = f"{base}/{name}"
    return os.environ["DATABASE_URL"]


def manage(code: str, **env: str) -> str:
    """Run Python with Django set up (a process of its own: this one never holds Django's
    connections while the server runs); what it printed."""
    prelude = (
        "import django, os, sys\n"
        f"sys.path.insert(0, {str(ROOT)!r})\n"
        "os.environ.setdefault('DJANGO_SETTINGS_MODULE', 'config.settings')\n"
        "django.setup()\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", prelude + code],
        cwd=ROOT,
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=1800,
    )
    if result.returncode:
        raise RuntimeError(result.stderr[-3000:])
    return result.stdout.strip()


@dataclass
class Server:
    process: subprocess.Popen
    port: int
    var_dir: str

    def worker_pids(self) -> list[int]:
        import psutil

        return [child.pid for child in psutil.Process(self.process.pid).children()]

    def worker_memory(self) -> int:
        """The workers' resident memory together, in bytes (unique set size where the system
        tells it: pages shared with the master after the fork are not counted)."""
        import psutil

        total = 0
        for child in psutil.Process(self.process.pid).children():
            try:
                info = child.memory_full_info()
                total += getattr(info, "uss", info.rss)
            except psutil.Error:
                pass
        return total

    def stop(self) -> None:
        try:
            os.killpg(self.process.pid, signal.SIGTERM)
            self.process.wait(timeout=30)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            os.killpg(self.process.pid, signal.SIGKILL)
        shutil.rmtree(self.var_dir, ignore_errors=True)


def start_gunicorn(*, port: int, workers: int, **env: str) -> Server:
    """gunicorn with the project's configuration on 127.0.0.1:``port``, DEBUG off, its own
    VAR_DIR (the file caches start empty), and ``env`` on top."""
    var_dir = tempfile.mkdtemp(prefix="bench-var-")
    process = subprocess.Popen(
        [sys.executable, "-m", "gunicorn", "-c", "config/gunicorn.conf.py", "config.wsgi",
         "--workers", str(workers), "--bind", f"127.0.0.1:{port}"],
        cwd=ROOT,
        env={
            **os.environ,
            "DEBUG": "false",
            "SECRET_KEY": SECRET_KEY,
            "ALLOWED_HOSTS": "127.0.0.1",
            # Plain HTTP on loopback: in production a TLS proxy sits in front.
            "SECURE_SSL_REDIRECT": "false",
            "LOG_LEVEL": "WARNING",
            "DB_CONN_MAX_AGE": "600",
            "VAR_DIR": var_dir,
            **env,
        },
        start_new_session=True,
    )  # fmt: skip
    server = Server(process, port, var_dir)
    for _ in range(300):
        try:
            if call(port, "GET", "/healthz", timeout=1)[0] == 200:
                return server
        except OSError:
            time.sleep(0.1)
    server.stop()
    raise RuntimeError("gunicorn did not start")


def call(
    port: int,
    method: str,
    path: str,
    body: dict | None = None,
    token: str = "",
    timeout: float = 30,
    connection: http.client.HTTPConnection | None = None,
) -> tuple[int, object]:
    """One request; (status, JSON answer or None). Raises OSError or HTTPException when the
    server gives no answer."""
    own = connection is None
    connection = connection or http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        headers = {"Content-Type": "application/json"}
        if token:
            headers["Authorization"] = f"Bearer {token}"
        connection.request(method, path, json.dumps(body) if body is not None else None, headers)
        response = connection.getresponse()
        raw = response.read()
        try:
            payload = json.loads(raw) if raw else None
        except ValueError:
            payload = None
        return response.status, payload
    finally:
        if own:
            connection.close()


class PostgresLog:
    """The lines PostgreSQL's log gains from now on about one database (the machine's
    cluster logs to /var/log/postgresql/; PG_LOG names another file)."""

    def __init__(self, database: str) -> None:
        found = [PG_LOG] if PG_LOG else sorted(glob.glob("/var/log/postgresql/postgresql-*.log"))
        self.path = found[-1] if found else ""
        self.database = database
        self.start = os.path.getsize(self.path) if self.readable else 0

    @property
    def readable(self) -> bool:
        return bool(self.path) and os.access(self.path, os.R_OK)

    def entries(self) -> list[str]:
        """Each entry since the start (a line and its continuation lines) of the database."""
        if not self.readable:
            return []
        with open(self.path, encoding="utf-8", errors="replace") as log:
            log.seek(self.start)
            text = log.read()
        entries: list[str] = []
        for line in text.splitlines():
            if line[:2].isdigit() or not entries:
                entries.append(line)
            else:
                entries[-1] += "\n" + line
        # Entries of the same process that follow one of the database (DETAIL, STATEMENT)
        # carry its prefix too: "%m [%p] %q%u@%d".
        return [entry for entry in entries if f"@{self.database} " in entry.split("\n")[0]]

    def deadlocks(self) -> list[str]:
        """Each "deadlock detected" with the entries that explain it (DETAIL, STATEMENT)."""
        entries = self.entries()
        found = []
        for index, entry in enumerate(entries):
            if "deadlock detected" in entry.split("\n")[0]:
                pid = entry.split("[", 1)[1].split("]", 1)[0]
                related = [
                    e
                    for e in entries[index + 1 : index + 4]
                    if f"[{pid}]" in e and ("DETAIL" in e or "STATEMENT" in e or "HINT" in e)
                ]
                found.append("\n".join([entry, *related]))
        return found
