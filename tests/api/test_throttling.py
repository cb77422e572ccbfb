"""The rate limit holds in total across the web server's worker processes."""

from __future__ import annotations

import http.client
import json
import os
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
import redis

from memories import services
from tests.support import gunicorn_server, http_get, require

REDIS = os.environ.get("TEST_REDIS_URL", "redis://127.0.0.1:6379/13")


def _require_redis() -> None:
    try:
        reachable = bool(redis.Redis.from_url(REDIS, socket_connect_timeout=0.5).ping())
    except redis.RedisError:
        reachable = False
    missing = f"No Redis at {REDIS} (start one, or set TEST_REDIS_URL)"
    require(reachable, missing, strict=bool(os.environ.get("CI")))


@pytest.mark.transactional
@pytest.mark.django_db(transaction=True)
def test_one_key_gets_its_rate_in_total_from_several_workers(tmp_path, project):
    _require_redis()
    _, key = services.api_key_create(project=project, name="busy")
    _, other = services.api_key_create(project=project, name="calm")
    path = f"/api/projects/{project.slug}/memories"
    # Many at once from one key: no concurrency limit here, the rate is what is measured.
    limits = {"API_THROTTLE_RATE": "40/min", "API_KEY_CONCURRENCY": "0"}
    with gunicorn_server(tmp_path, workers=4, CACHE_URL=REDIS, **limits) as port:

        def get(token: str) -> tuple[int, dict[str, str]]:
            status, _, headers = http_get(port, path, Authorization=f"Bearer {token}")
            return status, headers

        # All within one minute's window (the counters are per fixed minute).
        if time.time() % 60 > 50:
            time.sleep(61 - time.time() % 60)
        with ThreadPoolExecutor(16) as pool:
            answers = list(pool.map(lambda _: get(key), range(120)))
        statuses = [status for status, _ in answers]
        assert statuses.count(200) == 40, statuses
        assert statuses.count(429) == 80
        assert all(1 <= int(h["Retry-After"]) <= 60 for s, h in answers if s == 429)
        assert get(other)[0] == 200  # another key has its own budget


@pytest.mark.transactional
@pytest.mark.django_db(transaction=True)
def test_one_keys_heaviest_requests_leave_the_service_to_the_others(
    tmp_path, project, other_project
):
    """Five of the most complex requests the limits allow, at once from one key, against a
    4-worker server: the health check and another project's key are still answered at once."""
    from tests.factories import MemoryFactory

    tags = [f"**/a{t}/**/b*/**/c?d*/**/*{t}.py" for t in range(20)]  # at the limits, each
    for n in range(200):
        MemoryFactory(project=project, content=f"Rule {n}.", tags=tags)
    _, heavy = services.api_key_create(project=project, name="heavy")
    _, calm = services.api_key_create(project=other_project, name="calm")
    scope = [f"**/x{n}/**/y*/**/z?*/**/*{n}.py" for n in range(100)]
    body = json.dumps({"tokenBudget": 2000, "writeScope": scope, "timeBudgetMs": 10_000})
    _require_redis()  # the counters are exact in Redis (files are not atomic: see docs/api.md)
    limits = {"API_THROTTLE_RATE": "100000/min", "CACHE_URL": REDIS}
    with gunicorn_server(tmp_path, workers=4, **limits) as port:

        def post(token: str, path: str, payload: str) -> tuple[int, float]:
            client = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
            started = time.monotonic()
            try:
                headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
                client.request("POST", path, body=payload, headers=headers)
                return client.getresponse().status, time.monotonic() - started
            finally:
                client.close()

        heavy_path = f"/api/projects/{project.slug}/context"
        calm_path = f"/api/projects/{other_project.slug}/context"
        with ThreadPoolExecutor(6) as pool:
            flood = [pool.submit(post, heavy, heavy_path, body) for _ in range(5)]
            time.sleep(0.3)
            started = time.monotonic()
            health = http_get(port, "/healthz")[0]
            health_seconds = time.monotonic() - started
            other = post(calm, calm_path, json.dumps({"tokenBudget": 500}))
            heavy_answers = [f.result() for f in flood]
    assert health == 200
    assert health_seconds < 2
    assert other[0] == 200, other
    assert other[1] < 3, other
    statuses = sorted(status for status, _ in heavy_answers)
    # Two at once for one key (API_KEY_CONCURRENCY): the others are turned away at once.
    assert statuses.count(429) == 3, heavy_answers
    assert all(seconds < 2 for status, seconds in heavy_answers if status == 429)
