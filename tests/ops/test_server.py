"""Metrics add up across gunicorn's worker processes (prometheus-client multiprocess mode)."""

from __future__ import annotations

import http.client
import os
import signal
import socket
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from tests.ops.test_ops import _sample
from tests.support import database_url

ROOT = Path(__file__).resolve().parents[2]
TOKEN = "metrics-token-for-the-test-0123456789"


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _get(port: int, path: str, **headers: str) -> tuple[int, str, str]:
    client = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        client.request("GET", path, headers=headers)
        response = client.getresponse()
        return response.status, response.read().decode(), response.getheader("X-Request-ID", "")
    finally:
        client.close()


@pytest.mark.django_db
def test_counters_are_right_with_several_worker_processes(tmp_path):
    port = _free_port()
    env = {
        **os.environ,
        "DATABASE_URL": database_url(),
        "DEBUG": "false",
        "SECRET_KEY": "server-test-only-secret-key-0123456789abcdefghijklmnop",
        "ALLOWED_HOSTS": "127.0.0.1",
        "SECURE_SSL_REDIRECT": "false",
        "METRICS_TOKEN": TOKEN,
        "PROMETHEUS_MULTIPROC_DIR": str(tmp_path / "metrics"),
        "VAR_DIR": str(tmp_path),
        "WEB_CONCURRENCY": "3",
        "BIND": f"127.0.0.1:{port}",
    }
    server = subprocess.Popen(
        [sys.executable, "-m", "gunicorn", "-c", "config/gunicorn.conf.py", "config.wsgi"],
        cwd=ROOT, env=env, start_new_session=True,
    )  # fmt: skip
    try:
        for _ in range(200):
            try:
                if _get(port, "/healthz")[0] == 200:
                    break
            except OSError:
                time.sleep(0.05)
        # At once, so that every worker is busy and each takes some.
        with ThreadPoolExecutor(20) as pool:
            ids = set(
                pool.map(
                    lambda n: _get(port, "/healthz", **{"X-Request-ID": f"probe-{n}"})[2], range(60)
                )
            )
        assert ids == {f"probe-{n}" for n in range(60)}
        status, text, _ = _get(port, "/metrics", Authorization=f"Bearer {TOKEN}")
        assert status == 200
        # Every probe counted once, whichever worker answered it (plus the start-up probes).
        served = _sample(
            text, "http_requests_total", method="GET", endpoint="healthz", status="200"
        )
        assert served >= 61
        files = list((tmp_path / "metrics").glob("counter_*.db"))
        assert len(files) >= 2, "the requests were answered by more than one worker process"
        startup = served - 60
        status, again, _ = _get(port, "/metrics", Authorization=f"Bearer {TOKEN}")
        assert (
            _sample(again, "http_requests_total", method="GET", endpoint="healthz", status="200")
            == 60 + startup
        )
        assert (
            _sample(again, "http_requests_total", method="GET", endpoint="metrics", status="200")
            >= 1
        )
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=30)
