"""Metrics add up across gunicorn's worker processes (prometheus-client multiprocess mode)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest

from tests.ops.test_ops import _sample
from tests.support import gunicorn_server, http_get

TOKEN = "metrics-token-for-the-test-0123456789"


def _get(port: int, path: str, **headers: str) -> tuple[int, str, str]:
    status, body, response_headers = http_get(port, path, **headers)
    return status, body, response_headers.get("X-Request-ID", "")


@pytest.mark.django_db
def test_counters_are_right_with_several_worker_processes(tmp_path):
    with gunicorn_server(tmp_path, METRICS_TOKEN=TOKEN) as port:
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
