"""Learning from use, replayed on a real project history: does fitting a project's ranking
weights to what its agents used rank its later tasks better?

    createdb memory_retrieval
    export DATABASE_URL=postgres://postgres@127.0.0.1:5432/memory_retrieval
    .venv/bin/python manage.py migrate
    .venv/bin/python bench/feedback.py ../shared/retrieval/werkzeug

The dataset's memories go into a fresh project as bench/retrieval.py puts them. Each task of
the first half starts a run, asks for context with it (``limit`` 50, --replay-budget
tokens), and reports its outcome naming as used the memories it was given that are relevant
to it. The fit job then runs once on the project (assembly.ranking). The second half's tasks
are scored (nDCG@10, as bench/retrieval.py) with the weights in force before and after: the
same numbers when the fit was not adopted. The project is deleted at the end (--keep keeps
it).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.retrieval import ask, create_project, django_setup, load, measure  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("dataset", type=Path, help="folder with memories.jsonl and tasks.jsonl")
    parser.add_argument("--budgets", default="300,1000", help="token budgets, comma-separated")
    parser.add_argument("--replay-budget", type=int, default=1000)
    parser.add_argument("--keep", action="store_true", help="keep the benchmark's project")
    args = parser.parse_args()
    budgets = [int(b) for b in args.budgets.split(",")]
    memories, tasks = load(args.dataset)
    django_setup()
    from django.conf import settings

    from assembly.packing import weights_in_force
    from assembly.ranking import ranking_fit
    from memories import services
    from memories.actors import Actor
    from memories.models import Project

    settings.ASSEMBLY_CACHE_SECONDS = 0
    name = args.dataset.resolve().name
    project, key_of, _ = create_project(memories, name=f"{name}-feedback", policy={})
    actor = Actor.system("feedback-benchmark")
    first, second = tasks[: len(tasks) // 2], tasks[len(tasks) // 2 :]
    try:
        started = time.perf_counter()
        for number, task in enumerate(first):
            run, _ = services.run_start(
                project=project,
                external_id=f"replay-{number}",
                actor=actor,
                task_title=task.intent[:500],
                write_scope=task.write_scope,
            )
            result = ask(project, task, args.replay_budget, run_id=run.pk)
            used = [item.id for item in result.items if key_of.get(item.id) in task.relevant]
            services.run_record_outcome(
                run=run, outcome="succeeded", actor=actor, used_memory_ids=used
            )
        replayed = time.perf_counter() - started
        before = weights_in_force(project.policy)
        measured_before, _ = measure(project, second, budgets, key_of)
        fit = ranking_fit(project=project, actor=actor, force=True)
        project = Project.objects.select_related("policy").get(pk=project.pk)
        after = weights_in_force(project.policy)
        measured_after, _ = measure(project, second, budgets, key_of)
    finally:
        if not args.keep:
            Project.objects.filter(pk=project.pk).delete()
    print(
        f"{name}: {len(first)} tasks replayed with feedback in {replayed:.0f} s,"
        f" {len(second)} scored after the fit"
    )
    if fit is None:
        print("fit: none (too few runs naming used and unused memories)")
    else:
        print(f"fit: {fit.outcome}. {fit.reason}")
    print(f"weights before: {before}")
    print(f"weights after:  {after}")
    print("| budget | nDCG@10 before | nDCG@10 after | change |")
    print("|---:|---:|---:|---:|")
    for budget in budgets:
        old = statistics.mean(s[0] for s in measured_before[("service", budget)])
        new = statistics.mean(s[0] for s in measured_after[("service", budget)])
        print(f"| {budget} | {old:.3f} | {new:.3f} | {new - old:+.3f} |")


if __name__ == "__main__":
    main()
