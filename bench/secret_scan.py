"""What the secret scan costs on every write: one typical memory of about 300 bytes.

    .venv/bin/python bench/secret_scan.py [--rounds 7] [--calls 300]
    .venv/bin/python bench/secret_scan.py --baseline <(git show REV:memories/secrets.py)

Times ``memories.secrets.scan`` on a memory as agents write them (English with paths,
settings and numbers), on the same in German, Russian and Japanese, and on one with a
disguised token, in microseconds per call (the median of ``--rounds`` rounds of ``--calls``
calls each, after a warm-up that loads the detectors and Unicode's confusables data once).
With ``--baseline`` (another version of ``memories/secrets.py``: it must not import
``memories.folding``, as the version before it did not), both are timed in turns in the one
process, and the ratio is reported: absolute times move with the machine's load, a ratio
taken in the same run does not.
"""

from __future__ import annotations

import argparse
import importlib.machinery
import importlib.util
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

TEXTS = {
    "english": (
        "When modifying src/core/scheduler.py run the full test suite, not only the unit"
        " tests: the integration tests in tests/integration/test_queue.py catch ordering"
        " bugs that unit tests miss. Set QUEUE_WORKERS=4 locally; CI uses 8. See issue #412"
        " for the flaky retry, fixed in v2.3."
    ),
    "german": (
        "Vor jedem Release die Integrationstests in tests/integration/ laufen lassen; die"
        " Zeitüberschreitung der Ledger-API liegt seit Version 2.3 bei 30 Sekunden. Größere"
        " Batches (über 500) teilen, sonst bricht der Import ab."
    ),
    "russian": (
        "Перед релизом запускать интеграционные тесты в tests/integration/; таймаут API"
        " ledger с версии 2.3 равен 30 секундам. Пакеты больше 500 делить."  # noqa: RUF001
    ),
    "japanese": (
        "リリース前に tests/integration/ の結合テストを実行すること。ledger API の"
        "タイムアウトはバージョン2.3から30秒。500件を超えるバッチは分割する。"
    ),
    "disguised": (
        "Deploy with gh\u0440_Xb7kQ2mP9w\u200bR4tY6uI8oL1zC3vN5aS0dF7gH2 from CI; the"
        " bucket key is AKIAIOSF ODNN7EXAMPLE. Rotate both after the incident of 2026-11-02,"
        " and keep them in the vault under payments/stripe, never in a memory."
    ),
}


def _load(path: str) -> Any:
    """A module from a file of any name (``<(git show ...)`` is a pipe)."""
    loader = importlib.machinery.SourceFileLoader("baseline_secrets", path)
    spec = importlib.util.spec_from_loader("baseline_secrets", loader)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["baseline_secrets"] = module
    loader.exec_module(module)
    return module


def _median_us(scan: Callable[[str, str], Any], text: str, rounds: int, calls: int) -> float:
    times = []
    for _ in range(rounds):
        started = time.perf_counter()
        for _ in range(calls):
            scan(text, "content")
        times.append((time.perf_counter() - started) / calls * 1e6)
    return statistics.median(times)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--baseline", help="another memories/secrets.py to compare with")
    args = parser.parse_args()

    import django

    django.setup()
    from memories import secrets

    scans: dict[str, Callable[[str, str], Any]] = {"now": secrets.scan}
    if args.baseline:
        scans["baseline"] = _load(args.baseline).scan
    print(f"{'text':<10} {'bytes':>5} {'found':>5}", *(f"{name + ' µs':>12}" for name in scans))
    for name, text in TEXTS.items():
        for scan in scans.values():
            scan(text, "content")  # warm-up: detectors, confusables data
        # In turns, so both see the same load.
        results: dict[str, list[float]] = {label: [] for label in scans}
        for _ in range(args.rounds):
            for label, scan in scans.items():
                results[label].append(_median_us(scan, text, 1, args.calls))
        medians = {label: statistics.median(values) for label, values in results.items()}
        found = len(secrets.scan(text, "content"))
        line = f"{name:<10} {len(text.encode()):>5} {found:>5}"
        line += "".join(f" {medians[label]:>12.0f}" for label in scans)
        if "baseline" in medians:
            line += f"   now/baseline {medians['now'] / medians['baseline']:.2f}"
        print(line)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
