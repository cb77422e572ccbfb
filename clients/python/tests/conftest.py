"""The client's tests run against a real service: the repository's, under gunicorn (the
production server), on a fresh database, started once for the session.

``DATABASE_URL`` set (CI): a database ``<name>_client`` is made afresh on that server.
Unset: the service's embedded PostgreSQL, in a temporary folder. The service's checkout is
``MEMORY_LAYER_SERVICE_DIR``, by default the repository this client lives in.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import httpx2 as httpx
import pytest

SERVICE_DIR = Path(os.environ.get("MEMORY_LAYER_SERVICE_DIR", Path(__file__).resolve().parents[3]))


@dataclass
class Service:
    url: str
    key: str  # project "alpha"
    other_key: str  # project "beta"
    env: dict[str, str]

    def manage(self, *args: str) -> str:
        done = subprocess.run(
            [sys.executable, "manage.py", *args],
            cwd=SERVICE_DIR,
            env=self.env,
            capture_output=True,
            text=True,
            check=False,
        )
        if done.returncode:
            raise RuntimeError(f"manage.py {' '.join(args)} failed:\n{done.stderr}")
        return done.stdout

    def approve(self, memory_id: int) -> None:
        """A reviewer approves the memory (people approve; keys cannot)."""
        self.manage(
            "shell",
            "-c",
            "from django.contrib.auth import get_user_model;"
            "from memories import services; from memories.actors import Actor;"
            "from memories.models import Memory;"
            "u, _ = get_user_model().objects.get_or_create(username='client-tests-reviewer',"
            " defaults={'is_staff': True, 'is_superuser': True});"
            f"services.memory_approve(memory=Memory.objects.get(pk={int(memory_id)}),"
            " actor=Actor.for_user(u))",
        )


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _fresh_database(url: str) -> str:
    import psycopg

    parts = urlsplit(url)
    name = f"{parts.path.lstrip('/') or 'postgres'}_client"
    with psycopg.connect(url, autocommit=True) as connection:
        connection.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        connection.execute(f'CREATE DATABASE "{name}"')
    return urlunsplit(parts._replace(path=f"/{name}"))


@pytest.fixture(scope="session")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Service]:
    var = tmp_path_factory.mktemp("service-var")
    env = {
        **os.environ,
        "VAR_DIR": str(var),
        "DEBUG": "true",
        "API_THROTTLE_RATE": "100000/min",
        "WEB_CONCURRENCY": "2",
        "PYTHONUNBUFFERED": "1",
    }
    if os.environ.get("DATABASE_URL"):
        env["DATABASE_URL"] = _fresh_database(os.environ["DATABASE_URL"])
    port = _free_port()
    env["BIND"] = f"127.0.0.1:{port}"
    service = Service(url=f"http://127.0.0.1:{port}", key="", other_key="", env=env)
    service.manage("migrate", "--noinput", "-v", "0")
    service.key = service.manage("create_api_key", "alpha", "--name", "tests", "--create-project")
    service.key = service.key.strip().splitlines()[-1]
    other = service.manage("create_api_key", "beta", "--name", "tests", "--create-project")
    service.other_key = other.strip().splitlines()[-1]
    log = (var / "gunicorn.log").open("w")
    server = subprocess.Popen(
        [sys.executable, "-m", "gunicorn", "-c", "config/gunicorn.conf.py", "config.wsgi"],
        cwd=SERVICE_DIR,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(f"{service.url}/healthz", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if server.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(
                    f"the service did not start: {(var / 'gunicorn.log').read_text()}"
                )
            time.sleep(0.2)
        yield service
    finally:
        server.terminate()
        server.wait(timeout=30)
        log.close()


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"
