"""What the fault checks share: a database made afresh, Python run with Django against it,
gunicorn started and stopped, calls on loopback, and the checks with their failures.
"""

from __future__ import annotations

import http.client
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BASE_URL = os.environ["DATABASE_URL"].rsplit("/", 1)[0]
DATABASE = "memory_faults"
os.environ["DATABASE_URL"] = f"{BASE_URL}/{DATABASE}"
PG_BIN = Path("/usr/lib/postgresql/15/bin")
PRIVATE_PG_PORT = 5499
PRIVATE_REDIS_PORT = 6391
WEB_PORT = 8797
PYTHON = sys.executable
failures: list[str] = []


def check(condition: bool, message: str) -> None:
    print(("  ok   " if condition else "  FAIL ") + message)
    if not condition:
        failures.append(message)


def create_database(base_url: str, name: str, template: str | None = None) -> str:
    import psycopg
    from psycopg import sql

    with psycopg.connect(f"{base_url}/postgres", autocommit=True) as connection:
        connection.execute(
            sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
        )
        statement = sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name))
        if template:
            statement += sql.SQL(" TEMPLATE {}").format(sql.Identifier(template))
        connection.execute(statement)
    return f"{base_url}/{name}"


def manage(database_url: str, code: str) -> str:
    """Run Python with Django set up against ``database_url``; its printed output."""
    prelude = (
        "import django, os\n"
        "os.environ.setdefault('DJANGO_SETTINGS_MODULE', 'config.settings')\n"
        "django.setup()\n"
    )
    result = subprocess.run(
        [PYTHON, "-c", prelude + code],
        cwd=ROOT,
        env={**os.environ, "DATABASE_URL": database_url},
        capture_output=True,
        text=True,
        timeout=600,
    )
    if result.returncode:
        raise RuntimeError(result.stderr[-3000:])
    return result.stdout.strip()


SEED_PROJECT = """
from django.core.management import call_command
from memories import services
call_command("migrate", verbosity=0)
project = services.project_create(name="Faults", slug="faults")
print(services.api_key_create(project=project, name="faults")[1])
"""


def start_web(database_url: str, **env: str) -> subprocess.Popen:
    server = subprocess.Popen(
        [
            PYTHON,
            "-m",
            "gunicorn",
            "-c",
            "config/gunicorn.conf.py",
            "config.wsgi",
            "--workers",
            "2",
            "--bind",
            f"127.0.0.1:{WEB_PORT}",
        ],
        cwd=ROOT,
        env={
            **os.environ,
            "DATABASE_URL": database_url,
            "DEBUG": "false",
            "SECRET_KEY": "fault-tests-only-secret-key-0123456789abcdefghijklmnop",
            "ALLOWED_HOSTS": "127.0.0.1",
            "SECURE_SSL_REDIRECT": "false",
            "API_THROTTLE_RATE": "100000000/min",
            "DB_CONN_MAX_AGE": "600",
            "VAR_DIR": tempfile.mkdtemp(prefix="faults-var-"),
            "LOG_LEVEL": "ERROR",
            **env,
        },
        start_new_session=True,
    )
    for _ in range(150):
        try:
            status, _, _ = call("GET", "/healthz", timeout=1)
            if status == 200:
                return server
        except OSError:
            time.sleep(0.1)
    raise RuntimeError("gunicorn did not start")


def stop(process: subprocess.Popen) -> None:
    try:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=30)
    except (ProcessLookupError, subprocess.TimeoutExpired):
        os.killpg(process.pid, signal.SIGKILL)


def call(
    method: str,
    path: str,
    body: dict | None = None,
    token: str = "",
    timeout: float = 10,
    **headers: str,
) -> tuple[int, dict, dict]:
    connection = http.client.HTTPConnection("127.0.0.1", WEB_PORT, timeout=timeout)
    try:
        connection.request(
            method,
            path,
            json.dumps(body) if body is not None else None,
            {
                "Content-Type": "application/json",
                **({"Authorization": f"Bearer {token}"} if token else {}),
                **headers,
            },
        )
        response = connection.getresponse()
        raw = response.read()
        try:
            payload = json.loads(raw) if raw else {}
        except ValueError:
            payload = {"raw": raw[:200].decode(errors="replace")}
        return response.status, payload, dict(response.getheaders())
    finally:
        connection.close()
