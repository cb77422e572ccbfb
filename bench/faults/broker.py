"""(c) The broker down (see bench.faults)."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
import time

from bench.faults.harness import (
    BASE_URL,
    DATABASE,
    PRIVATE_REDIS_PORT,
    SEED_PROJECT,
    call,
    check,
    create_database,
    manage,
    start_web,
    stop,
)


def broker_down() -> None:
    print("(c) the broker (and the cache) down")
    url = create_database(BASE_URL, DATABASE)
    token = manage(url, SEED_PROJECT).splitlines()[-1]
    folder = tempfile.mkdtemp(prefix="faults-redis-")
    redis_url = f"redis://127.0.0.1:{PRIVATE_REDIS_PORT}/0"
    redis = subprocess.Popen(
        [
            "redis-server",
            "--port",
            str(PRIVATE_REDIS_PORT),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
            "--dir",
            folder,
        ],
        stdout=subprocess.DEVNULL,
        start_new_session=True,
    )
    server = None
    try:
        time.sleep(0.5)
        server = start_web(url, CELERY_BROKER_URL=redis_url, CACHE_URL=redis_url)
        check(call("GET", "/readyz")[0] == 200, "/readyz is 200 while the broker is up")
        stop(redis)
        time.sleep(0.5)
        base = "/api/projects/faults"
        steps = [
            (
                "create a memory",
                "POST",
                f"{base}/memories",
                {"type": "warning", "content": "Never deploy on Fridays.", "tags": ["deploy/**"]},
            ),
            ("list memories", "GET", f"{base}/memories", None),
            (
                "start a run",
                "POST",
                f"{base}/runs",
                {"externalId": "broker-down-1", "writeScope": ["deploy/run.sh"]},
            ),
        ]
        results = {}
        for name, method, path, body in steps:
            started = time.monotonic()
            status, payload, _ = call(method, path, body, token=token)
            results[name] = payload
            check(
                200 <= status < 300 and time.monotonic() - started < 2,
                f"{name}: {status} in {time.monotonic() - started:.2f} s",
            )
        run_id = results["start a run"].get("id")
        for name, path, body in [
            (
                "assemble context",
                f"{base}/context",
                {"runId": run_id, "writeScope": ["deploy/run.sh"], "tokenBudget": 500},
            ),
            ("report the outcome", f"{base}/runs/{run_id}/outcome", {"outcome": "succeeded"}),
        ]:
            started = time.monotonic()
            status, payload, _ = call("POST", path, body, token=token)
            check(
                200 <= status < 300 and time.monotonic() - started < 2,
                f"{name}: {status} in {time.monotonic() - started:.2f} s",
            )
        status, ready, _ = call("GET", "/readyz")
        check(
            status == 503
            and not ready["checks"]["broker"]["ok"]
            and ready["checks"]["database"]["ok"],
            "/readyz is 503 naming the broker",
        )
        check(call("GET", "/healthz")[0] == 200, "/healthz is 200")
    finally:
        if server:
            stop(server)
        if redis.poll() is None:
            stop(redis)
        shutil.rmtree(folder, ignore_errors=True)
