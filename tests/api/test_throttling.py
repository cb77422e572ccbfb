"""The rate limit holds in total across the web server's worker processes."""

from __future__ import annotations

import os
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
import redis

from memories import services
from tests.support import gunicorn_server, http_get

REDIS = os.environ.get("TEST_REDIS_URL", "redis://127.0.0.1:6379/13")


def _require_redis() -> None:
    try:
        redis.Redis.from_url(REDIS, socket_connect_timeout=0.5).ping()
    except redis.RedisError:
        if os.environ.get("CI"):
            pytest.fail(f"No Redis at {REDIS}: CI must run this test against a real one.")
        pytest.skip(f"No Redis at {REDIS} (start one, or set TEST_REDIS_URL).")


@pytest.mark.transactional
@pytest.mark.django_db(transaction=True)
def test_one_key_gets_its_rate_in_total_from_several_workers(tmp_path, project):
    _require_redis()
    _, key = services.api_key_create(project=project, name="busy")
    _, other = services.api_key_create(project=project, name="calm")
    path = f"/api/projects/{project.slug}/memories"
    with gunicorn_server(tmp_path, workers=4, CACHE_URL=REDIS, API_THROTTLE_RATE="40/min") as port:

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
