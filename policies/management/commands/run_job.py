"""Run a lifecycle job now, as the beat would, and say what it did."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError

from policies.jobs import JOBS


class Command(BaseCommand):
    help = "Run lifecycle jobs now (every one with --all); with no name, list them."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("names", nargs="*", help="jobs to run, e.g. decay_memories")
        parser.add_argument("--all", action="store_true", help="run every job, in order")

    def handle(self, *args: Any, names: list[str], all: bool, **options: Any) -> None:
        if all:
            names = list(JOBS)
        if not names:
            width = max(len(name) for name in JOBS)
            self.stdout.write("Jobs (run one with: manage.py run_job NAME, or --all):")
            for job in JOBS.values():
                self.stdout.write(f"  {job.name:<{width}}  {job.label}")
            return
        unknown = [name for name in names if name not in JOBS]
        if unknown:
            raise CommandError(
                f"No job {', '.join(map(repr, unknown))}; the jobs are: {', '.join(JOBS)}."
            )
        for name in names:
            done = JOBS[name].run_now()
            self.stdout.write(f"{JOBS[name].label} ({name}): {done}")
