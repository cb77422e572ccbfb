"""(a) The database restarted under load (see bench.faults)."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import threading
import time
import uuid
from collections import Counter
from pathlib import Path

from bench.faults.harness import (
    DATABASE,
    PG_BIN,
    PRIVATE_PG_PORT,
    SEED_PROJECT,
    call,
    check,
    create_database,
    manage,
    start_web,
    stop,
)


def as_postgres(*command: str) -> list[str]:
    """PostgreSQL refuses to run as root: run its tools as the postgres user then."""
    return ["runuser", "-u", "postgres", "--", *command] if os.geteuid() == 0 else list(command)


def database_restart() -> None:
    print("(a) PostgreSQL restarted under load")
    folder = Path(tempfile.mkdtemp(prefix="faults-pg-"))
    data = folder / "data"
    if os.geteuid() == 0:
        shutil.chown(folder, "postgres", "postgres")
    subprocess.run(
        as_postgres(str(PG_BIN / "initdb"), "-D", str(data), "-A", "trust", "-U", "postgres"),
        check=True,
        capture_output=True,
    )
    pg_ctl = [str(PG_BIN / "pg_ctl"), "-D", str(data), "-l", str(folder / "log"), "-w"]
    options = f"-p {PRIVATE_PG_PORT} -k {folder} -c listen_addresses=127.0.0.1"
    subprocess.run(as_postgres(*pg_ctl, "-o", options, "start"), check=True, capture_output=True)
    server = None
    try:
        url = create_database(f"postgres://postgres@127.0.0.1:{PRIVATE_PG_PORT}", DATABASE)
        token = manage(url, SEED_PROJECT).splitlines()[-1]
        server = start_web(url)
        acknowledged: dict[int, str] = {}
        answers: list[tuple[float, int, dict, dict]] = []
        down = threading.Event()
        stopping = threading.Event()

        def writer(number: int) -> None:
            sequence = 0
            while not stopping.is_set():
                sequence += 1
                content = f"Writer {number} noted fact {sequence} about the importer."
                started = time.monotonic()
                try:
                    status, payload, headers = call(
                        "POST",
                        "/api/projects/faults/memories",
                        {"type": "learning", "content": content},
                        token=token,
                        timeout=15,
                        **{"Idempotency-Key": str(uuid.uuid4())},
                    )
                except OSError as exc:
                    status, payload, headers = 0, {"exception": repr(exc)}, {}
                answers.append((time.monotonic() - started, status, payload, headers))
                if status == 201:
                    acknowledged[payload["id"]] = content
                time.sleep(0.02)

        writers = [threading.Thread(target=writer, args=(n,)) for n in range(5)]
        for thread in writers:
            thread.start()
        time.sleep(3)
        subprocess.run(as_postgres(*pg_ctl, "-m", "fast", "stop"), check=True, capture_output=True)
        down.set()
        stopped_at = len(answers)
        time.sleep(1)
        ready_status, ready, _ = call("GET", "/readyz")
        time.sleep(3)
        during = answers[stopped_at:]
        subprocess.run(
            as_postgres(*pg_ctl, "-o", options, "start"), check=True, capture_output=True
        )
        restarted_at = len(answers)
        time.sleep(4)
        stopping.set()
        for thread in writers:
            thread.join()
        after = answers[restarted_at:]
        statuses = Counter(status for _, status, _, _ in answers)
        print(f"  answers: {dict(statuses)}; {len(during)} while down, {len(after)} after")
        check(
            set(statuses) <= {201, 503},
            "every answer is a 201 or a 503 (no 500, no dropped connection)",
        )
        unavailable = [(p, h) for _, s, p, h in during if s == 503]
        check(bool(unavailable), "writes while the database is down are answered 503")
        check(
            all(
                p.get("error", {}).get("code") == "unavailable" and h.get("Retry-After") == "5"
                for p, h in unavailable
            ),
            "each 503 has the error shape (code unavailable) and Retry-After",
        )
        check(
            max(took for took, *_ in answers) < 10,
            f"no answer took 10 s or more (slowest {max(took for took, *_ in answers):.2f} s)",
        )
        check(
            ready_status == 503 and not ready["checks"]["database"]["ok"],
            "/readyz is 503 naming the database while it is down",
        )
        check(
            any(s == 201 for _, s, _, _ in after[len(after) // 2 :]),
            "writes succeed again after the restart",
        )
        stored = {
            int(line.split("\t")[0]): line.split("\t", 1)[1]
            for line in manage(
                url,
                "from memories.models import Memory\n"
                "for i, c in Memory.objects.values_list('id', 'content'): print(f'{i}\\t{c}')",
            ).splitlines()
        }
        lost = [i for i, content in acknowledged.items() if stored.get(i) != content]
        check(
            not lost,
            f"all {len(acknowledged)} acknowledged memories are stored as acknowledged "
            f"({len(lost)} lost)",
        )
    finally:
        if server:
            stop(server)
        subprocess.run(as_postgres(*pg_ctl, "-m", "immediate", "stop"), capture_output=True)
        shutil.rmtree(folder, ignore_errors=True)
