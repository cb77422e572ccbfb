"""Retrieval quality on a real project history: does assembly hand an agent the memories
that matter for its task?

    createdb memory_retrieval
    export DATABASE_URL=postgres://postgres@127.0.0.1:5432/memory_retrieval
    .venv/bin/python manage.py migrate
    .venv/bin/python bench/retrieval.py ../shared/retrieval/werkzeug --budgets 300,1000

A dataset folder holds ``memories.jsonl`` (``{"key", "content", "tags"}``, oldest first) and
``tasks.jsonl`` (``{"intent", "writeScope", "relevant": {key: gain}}``). Every memory is
created in one fresh project through the store's services (type learning, source run,
relevance score 0.5, all at about the same time); the table is analysed as the autovacuum
would; each task asks the real assembly for its write scope, its intent, each budget and
``limit`` 50 (cache off, nothing recorded); the chosen items, in their order, are scored
against the task's gains:

* nDCG@10: DCG of the first 10 items (gain / log2(i + 2)) over the DCG of the 10 best gains;
* precision: the share of chosen items that are relevant;
* gain: the chosen items' gains over the same number of the task's best gains.

Two baselines are computed here on the same data and fitted to the same budget the same
way (walk the ranking, keep each line ``- [learning] <content>`` that still fits under
``## Memories``, at most ``limit`` lines, tokens counted with tiktoken): scope match first
(``DIR/**`` matches a path under DIR, a plain tag that path), then BM25 (Okapi, k1 1.5,
b 0.75, words are lower-cased runs of letters, digits and underscores) of the content
against the intent; or the same scope rule, then newest first. The project is deleted at
the end (``--keep`` keeps it).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

LIMIT = 50
HEADER = "## Memories"
TYPE = "learning"


@dataclass(frozen=True)
class Task:
    intent: str
    write_scope: list[str]
    relevant: dict[str, float]


def load(folder: Path) -> tuple[list[dict], list[Task]]:
    memories = [json.loads(line) for line in (folder / "memories.jsonl").open() if line.strip()]
    tasks = [
        Task(row["intent"], row["writeScope"], row["relevant"])
        for row in map(json.loads, (folder / "tasks.jsonl").open())
    ]
    return memories, tasks


# --- scores -------------------------------------------------------------------------------------


def ndcg_at_10(gains: Sequence[float], ideal: Sequence[float]) -> float:
    def dcg(values: Sequence[float]) -> float:
        return sum(value / math.log2(i + 2) for i, value in enumerate(values[:10]))

    best = dcg(sorted(ideal, reverse=True))
    return dcg(gains) / best if best else 0.0


def scores(chosen: Sequence[str], task: Task) -> tuple[float, float, float]:
    """nDCG@10, precision and gain of the chosen memory keys, in order."""
    gains = [task.relevant.get(key, 0.0) for key in chosen]
    ideal = sorted(task.relevant.values(), reverse=True)
    precision = sum(1 for g in gains if g > 0) / len(gains) if gains else 0.0
    best = sum(ideal[: len(gains)])
    return ndcg_at_10(gains, ideal), precision, (sum(gains) / best if best else 0.0)


# --- baselines ----------------------------------------------------------------------------------

_WORD = re.compile(r"\w+")


def words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


def scope_match(tags: Sequence[str], write_scope: Sequence[str]) -> bool:
    for tag in tags:
        if tag.endswith("/**"):
            folder = tag[:-3].rstrip("/") + "/"
            if any(path.startswith(folder) for path in write_scope):
                return True
        elif tag in write_scope:
            return True
    return False


def line_of(content: str) -> str:
    return f"- [{TYPE}] {' '.join(content.split())}"


class Fitter:
    """Walks a ranking and keeps each line that still fits the budget, exactly."""

    def __init__(self, count: Callable[[str], int]) -> None:
        self.count = count
        self.line_tokens: dict[int, int] = {}

    def fit(self, ranking: Sequence[int], lines: Sequence[str], budget: int) -> list[int]:
        kept: list[int] = []
        text = HEADER
        used = self.count(text)
        for index in ranking:
            if len(kept) >= LIMIT:
                break
            tokens = self.line_tokens.get(index)
            if tokens is None:
                tokens = self.line_tokens[index] = self.count(lines[index])
            # A line costs at least its own tokens less the one it may share with the newline.
            if used + tokens - 1 > budget:
                continue
            candidate = f"{text}\n{lines[index]}"
            exact = self.count(candidate)
            if exact <= budget:
                kept.append(index)
                text, used = candidate, exact
        return kept


def baselines(
    memories: list[dict], tasks: list[Task], budgets: Sequence[int], count: Callable[[str], int]
) -> dict[tuple[str, int], list[tuple[float, float, float]]]:
    from rank_bm25 import BM25Okapi

    lines = [line_of(m["content"]) for m in memories]
    keys = [m["key"] for m in memories]
    bm25 = BM25Okapi([words(m["content"]) for m in memories], k1=1.5, b=0.75)
    fitter = Fitter(count)
    results: dict[tuple[str, int], list[tuple[float, float, float]]] = {}
    for task in tasks:
        matched = [scope_match(m["tags"], task.write_scope) for m in memories]
        text_scores = bm25.get_scores(words(task.intent))
        rankings = {
            "scope + BM25": sorted(
                range(len(memories)), key=lambda i: (not matched[i], -text_scores[i], i)
            ),
            "scope + recency": sorted(range(len(memories)), key=lambda i: (not matched[i], -i)),
        }
        for name, ranking in rankings.items():
            for budget in budgets:
                chosen = fitter.fit(ranking, lines, budget)
                results.setdefault((name, budget), []).append(
                    scores([keys[i] for i in chosen], task)
                )
    return results


# --- the service --------------------------------------------------------------------------------


def django_setup() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django

    django.setup()


def create_project(
    memories: list[dict], *, name: str, policy: dict[str, float]
) -> tuple[Any, dict[int, str], dict[str, float]]:
    """A fresh project holding the dataset's memories, created through the store's services
    (type learning, source run, relevance score 0.5, all at about the same time) and
    analysed as the autovacuum would; the dataset key of each memory id; and the timings."""
    from django.core.exceptions import ValidationError
    from django.db import connection

    from memories import services
    from memories.actors import Actor
    from memories.models import Memory, Project
    from memories.statistics import forget_common_words

    actor = Actor.system("retrieval-benchmark")
    slug = f"retrieval-{name}-{int(time.time())}"[:50]
    project = services.project_create(name=f"Retrieval benchmark: {name}", slug=slug, **policy)
    started = time.perf_counter()
    key_of: dict[int, str] = {}
    refused = 0
    for row in memories:
        try:
            memory = services.memory_create(
                project=project,
                type=TYPE,
                content=row["content"],
                tags=row["tags"],
                source="run",
                relevance_score=0.5,
                actor=actor,
            )
        except ValidationError:
            refused += 1  # e.g. a commit message the secrets scan refuses
            continue
        key_of[memory.pk] = row["key"]
    timings = {"create_s": time.perf_counter() - started, "refused": refused}
    with connection.cursor() as cursor:
        cursor.execute(f"ANALYZE {Memory._meta.db_table}")
    forget_common_words()
    return Project.objects.select_related("policy").get(pk=project.pk), key_of, timings


def ask(project: Any, task: Task, budget: int, *, run_id: int | None = None) -> Any:
    """The real assembly's answer to a task (cache off; recorded only for a run)."""
    from assembly.requests import ContextRequest
    from assembly.services import context_assemble
    from memories.actors import Actor

    return context_assemble(
        project=project,
        request=ContextRequest(
            token_budget=budget,
            write_scope=tuple(task.write_scope),
            intent=task.intent,
            limit=LIMIT,
            run_id=run_id,
        ),
        actor=Actor.system("retrieval-benchmark"),
        record=run_id is not None,
    )


def measure(
    project: Any, tasks: Sequence[Task], budgets: Sequence[int], key_of: dict[int, str]
) -> tuple[dict[tuple[str, int], list[tuple[float, float, float]]], list[float]]:
    """Each task's scores at each budget, and the assembly's latencies (ms)."""
    results: dict[tuple[str, int], list[tuple[float, float, float]]] = {}
    latencies: list[float] = []
    for task in tasks:
        for budget in budgets:
            began = time.perf_counter()
            result = ask(project, task, budget)
            latencies.append((time.perf_counter() - began) * 1000)
            chosen = [key_of[item.id] for item in result.items if item.id in key_of]
            results.setdefault(("service", budget), []).append(scores(chosen, task))
    return results, latencies


def service(
    memories: list[dict],
    tasks: list[Task],
    budgets: Sequence[int],
    *,
    name: str,
    keep: bool,
    policy: dict[str, float],
) -> tuple[dict[tuple[str, int], list[tuple[float, float, float]]], dict[str, float]]:
    from django.conf import settings

    from memories.models import Project

    settings.ASSEMBLY_CACHE_SECONDS = 0
    project, key_of, timings = create_project(memories, name=name, policy=policy)
    try:
        results, latencies = measure(project, tasks, budgets, key_of)
        timings["p50_ms"] = statistics.median(latencies)
        timings["p95_ms"] = sorted(latencies)[int(0.95 * (len(latencies) - 1))]
        return results, timings
    finally:
        if not keep:
            Project.objects.filter(pk=project.pk).delete()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("dataset", type=Path, help="folder with memories.jsonl and tasks.jsonl")
    parser.add_argument("--budgets", default="300,1000", help="token budgets, comma-separated")
    parser.add_argument("--keep", action="store_true", help="keep the benchmark's project")
    parser.add_argument(
        "--policy",
        action="append",
        default=[],
        metavar="FIELD=VALUE",
        help="a project policy field for the run (e.g. weight_scope=2); may repeat",
    )
    args = parser.parse_args()
    policy = {k: float(v) for k, v in (item.split("=", 1) for item in args.policy)}
    budgets = [int(b) for b in args.budgets.split(",")]
    memories, tasks = load(args.dataset)
    django_setup()
    from memories.tokens import count_tokens

    def count(text: str) -> int:
        return count_tokens(text, "o200k_base")

    name = args.dataset.resolve().name
    measured, timings = service(memories, tasks, budgets, name=name, keep=args.keep, policy=policy)
    measured |= baselines(memories, tasks, budgets, count)
    print(
        (f"policy {policy}; " if policy else "")
        + f"{name}: {len(memories):,} memories ({timings['refused']:.0f} refused), "
        f"{len(tasks)} tasks; created in {timings['create_s']:.1f} s; "
        f"assembly p50 {timings['p50_ms']:.1f} ms, p95 {timings['p95_ms']:.1f} ms"
    )
    print("| budget | ranking | nDCG@10 | precision | gain | nDCG vs scope + BM25 |")
    print("|---:|---|---:|---:|---:|---:|")
    for budget in budgets:
        reference = statistics.mean(s[0] for s in measured[("scope + BM25", budget)])
        for ranking in ("service", "scope + BM25", "scope + recency"):
            rows = measured[(ranking, budget)]
            ndcg, precision, gain = (statistics.mean(s[i] for s in rows) for i in range(3))
            ratio = ndcg / reference if reference else float("nan")
            print(
                f"| {budget} | {ranking} | {ndcg:.3f} | {precision:.3f} | {gain:.3f} "
                f"| {ratio:.2f}x |"
            )


if __name__ == "__main__":
    main()
