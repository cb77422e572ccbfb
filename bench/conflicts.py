"""Detection of repeats and possible conflicts, measured on labelled pairs of memories.

    .venv/bin/python bench/conflicts.py [bench/conflicts/pairs.jsonl] [--show]

Each line of the file is ``{"id", "project", "label", "class", "a": {"type", "content",
"tags"}, "b": {...}, "note"}`` with ``label`` one of ``repeat``, ``conflict``, ``compatible``
(related, both can be true) or ``unrelated``; ``class`` says what a conflict or a compatible
near-miss turns on (``quantity``, ``version``, ``schedule``, ``polarity``, ``exclusivity``,
``naming``, ``choice``, ``other``; also ``scope`` or ``related`` for compatible pairs), whether
a repeat is ``reworded`` or a ``paraphrase``, else ``unrelated``. Both contents are embedded by
the configured model (``MEMORY_EMBEDDINGS``, by default the offline one) and compared by the
store's own detection (knowledge.contradictions) with the default policy's thresholds, exactly
as a memory written through the service is compared with its candidates. The report gives, for
"possible conflict" and for "repeat", precision (of the pairs flagged so, the share
labelled so) and recall (of the pairs labelled so, the share flagged so), the confusion
matrix, and the same without embeddings (``MEMORY_EMBEDDINGS=off``: words only).
``--show`` lists every pair classified other than labelled.

The pairs were written for this measure, as a team's memories would be, and nothing in the
detection knows them. bench/conflicts/holdout.jsonl holds further pairs in the same format from
projects not in pairs.jsonl: it is measured (pass it as the file) but never tuned against.
blind.jsonl to blind6.jsonl were each written by a reader who had never seen the detection
(four projects of other kinds each), measured once as they came, then read for what the
rules missed (docs/contradictions.md gives both figures). adversarial.jsonl to
adversarial3.jsonl hold reviewers' pairs aimed at each reading of the rules, labelled only
conflict or not (their "compatible" pairs include the same claim said two ways, so their
repeat columns say nothing).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

LABELS = ("repeat", "conflict", "compatible", "unrelated")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("pairs", nargs="?", default=str(ROOT / "bench/conflicts/pairs.jsonl"))
    parser.add_argument("--show", action="store_true", help="list the misclassified pairs")
    args = parser.parse_args()

    import django

    django.setup()
    import numpy as np

    from knowledge import contradictions, embeddings, reading
    from memories.models import MemoryPolicy

    similarity = MemoryPolicy._meta.get_field("pair_similarity").default
    overlap = MemoryPolicy._meta.get_field("repeat_overlap").default
    pairs = [json.loads(line) for line in Path(args.pairs).read_text().splitlines() if line]
    embedder = embeddings.configured()
    cosines: list[float | None] = [None] * len(pairs)
    if embedder is not None:
        texts = [t for p in pairs for t in (p["a"]["content"], p["b"]["content"])]
        vectors = embedder.embed([embeddings.memory_text(t) for t in texts])
        cosines = [float(np.dot(vectors[2 * i], vectors[2 * i + 1])) for i in range(len(pairs))]

    print(
        f"{len(pairs)} labelled pairs: "
        + ", ".join(
            f"{n} {label}" for label, n in sorted(Counter(p["label"] for p in pairs).items())
        )
    )
    print(f"thresholds: pair_similarity {similarity}, repeat_overlap {overlap}\n")
    runs = [("with embeddings (" + embedder.name + ")", cosines)] if embedder else []
    runs.append(("words only", [None] * len(pairs)))
    for title, run_cosines in runs:
        started = time.perf_counter()
        found = []
        timings = []
        for pair, cosine in zip(pairs, run_cosines, strict=True):
            t0 = time.perf_counter()
            reading.read.cache_clear()
            verdict = contradictions.compare(
                pair["a"]["content"],
                pair["b"]["content"],
                cosine=cosine,
                similarity=similarity,
                repeat_overlap=overlap,
            )
            timings.append(time.perf_counter() - t0)
            found.append(verdict)
        elapsed = time.perf_counter() - started
        print(f"## {title}\n")
        report(pairs, found)
        by_class(pairs, found)
        print(
            f"\nper pair: median {statistics.median(timings) * 1e6:.0f} µs,"
            f" p95 {sorted(timings)[int(0.95 * len(timings))] * 1e6:.0f} µs"
            f" ({elapsed:.2f} s in all)\n"
        )
        if args.show:
            for pair, verdict in zip(pairs, found, strict=True):
                said = verdict.kind or "none"
                expected = pair["label"] if pair["label"] in ("repeat", "conflict") else "none"
                if said != expected:
                    print(
                        f"- {pair['id']} labelled {pair['label']}, found {said}"
                        f" (similarity {verdict.similarity:.2f},"
                        f" {verdict.evidence.get('signals', '')}): {pair['note']}"
                    )
            print()
    return 0


def by_class(pairs: list[dict], found: list) -> None:
    """Recall of each class of conflict and repeat, and what each compatible near-miss
    class was called."""
    print("\n| label | class | pairs | found as labelled | flagged as conflict |")
    print("|---|---|---:|---:|---:|")
    groups: dict[tuple[str, str], list] = {}
    for pair, verdict in zip(pairs, found, strict=True):
        groups.setdefault((pair["label"], pair.get("class", "-")), []).append(verdict)
    for (label, klass), verdicts in sorted(groups.items()):
        if label == "unrelated":
            continue
        right = sum(1 for v in verdicts if v.kind == label)
        conflicts = sum(1 for v in verdicts if v.kind == "conflict")
        print(f"| {label} | {klass} | {len(verdicts)} | {right} | {conflicts} |")


def report(pairs: list[dict], found: list) -> None:
    print("| labelled \\ found | repeat | conflict | nothing |")
    print("|---|---:|---:|---:|")
    for label in LABELS:
        row = Counter(
            v.kind or "nothing" for p, v in zip(pairs, found, strict=True) if p["label"] == label
        )
        print(f"| {label} | {row['repeat']} | {row['conflict']} | {row['nothing']} |")
    print("\n| kind | precision | recall | F1 |")
    print("|---|---:|---:|---:|")
    for kind in ("conflict", "repeat"):
        flagged = [p for p, v in zip(pairs, found, strict=True) if v.kind == kind]
        labelled = [p for p in pairs if p["label"] == kind]
        hits = sum(1 for p in flagged if p["label"] == kind)
        precision = hits / len(flagged) if flagged else 0.0
        recall = hits / len(labelled) if labelled else 0.0
        f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
        print(
            f"| {kind} | {precision:.3f} ({hits}/{len(flagged)}) |"
            f" {recall:.3f} ({hits}/{len(labelled)}) | {f1:.3f} |"
        )


if __name__ == "__main__":
    raise SystemExit(main())
