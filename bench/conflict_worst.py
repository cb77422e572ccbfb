"""What one comparison of two memories costs at its worst: texts as long as a memory may be
(MEMORY_CONTENT_MAX_CHARS), each one shape repeated (a long hyphenated name, a thousand
settings, a thousand versions, lone punctuation), against itself and against an ordinary
memory, beside an ordinary pair in the same run.

    .venv/bin/python bench/conflict_worst.py [--repeat 5]

A write compares a memory with at most a handful of candidates and the walk a batch with
theirs, so no shape may cost much more than an ordinary pair: the report gives each
shape's median, the ordinary pair's, and their ratio.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

SHAPES = [
    "rocksdb-", "AbC", "X-", "x=1 ", "MAX_RETRIES=5 ", "v1.2.3 ", "10 ms ", "twice a day ",
    "only ", "every ", "no ", "never set x ", "we keep x in Y ", "a.b.", "a_b ", "@a/b ",
    "http://a.b/", "`x` ", "e.g. ", "Mon ", "1,000,", "(", "- ", "# ", "-by: ", "is ", "the ",
]  # fmt: skip
ORDINARY = (
    "Webhook deliveries retry 5 times with exponential backoff, then go to the dead-letter "
    "queue; only the billing worker may replay them.",
    "The billing worker replays dead-lettered webhooks every night at 02:00 and retries each "
    "delivery 3 times.",
)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=5, help="timings per shape")
    args = parser.parse_args()

    import django

    django.setup()
    from django.conf import settings

    from knowledge import contradictions, reading

    limit = settings.MEMORY_CONTENT_MAX_CHARS

    def timed(a: str, b: str) -> float:
        runs = []
        for _ in range(args.repeat):
            reading.read.cache_clear()
            started = time.perf_counter()
            contradictions.compare(a, b, cosine=0.7)
            runs.append(time.perf_counter() - started)
        return statistics.median(runs)

    ordinary = timed(*ORDINARY)
    print(f"ordinary pair: {ordinary * 1000:.2f} ms (median of {args.repeat})")
    print(f"texts of {limit} characters, each one shape repeated:\n")
    print("| shape | against itself, ms | against an ordinary memory, ms | worst / ordinary |")
    print("|---|---:|---:|---:|")
    worst = 0.0
    for shape in SHAPES:
        text = (shape * (limit // len(shape) + 1))[:limit]
        itself, other = timed(text, text), timed(text, ORDINARY[1])
        worst = max(worst, itself, other)
        print(
            f"| `{shape.strip() or repr(shape)}` | {itself * 1000:.1f} | {other * 1000:.1f} |"
            f" {max(itself, other) / ordinary:.0f}x |"
        )
    print(f"\nworst: {worst * 1000:.1f} ms, {worst / ordinary:.0f}x the ordinary pair")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
