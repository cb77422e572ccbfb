"""Run the fault checks: ``python -m bench.faults [a b c]`` (all three by default)."""

from __future__ import annotations

import sys
import time

from bench.faults.broker import broker_down
from bench.faults.database import database_restart
from bench.faults.harness import failures
from bench.faults.worker import worker_killed


def main() -> None:
    parts = sys.argv[1:] or ["a", "b", "c"]
    for part, run in (("a", database_restart), ("b", worker_killed), ("c", broker_down)):
        if part in parts:
            started = time.monotonic()
            run()
            print(f"  ({time.monotonic() - started:.0f} s)\n")
    print("all checks passed" if not failures else f"{len(failures)} checks failed")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
