"""Every lifecycle job by name: what it is called in words, and how to run it now.

The beat runs them on their schedule (config/settings.py); a person runs one at once with
``manage.py run_job NAME`` or the admin's *Run now* on *Job states*. Run now, a job runs
here, in this process, over every memory (in one part), and records its run as the beat's
do."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from celery import current_app

from policies import tasks


@dataclass(frozen=True)
class Job:
    name: str  # the task's and the job state's name
    label: str  # in words
    # The task, or the name of a task declared in a layer above this one (ops).
    task: Any
    in_parts: bool = False  # the beat may split it into ranges of ids

    def run_now(self) -> Any:
        """Run the whole job here and now; what it did (the task's summary)."""
        kwargs = {"part": 1, "parts": 1} if self.in_parts else {}
        found = self.task
        if isinstance(found, str):
            current_app.loader.import_default_modules()  # the apps' tasks, as a worker does
            found = current_app.tasks[found]
        return found.apply(kwargs=kwargs, throw=True).get()


JOBS = {
    job.name: job
    for job in [
        Job("expire_memories", "Expiry", tasks.expire_memories, in_parts=True),
        Job("decay_memories", "Confidence decay", tasks.decay_memories, in_parts=True),
        Job("update_tiers", "Hot, warm and cold tiers", tasks.update_tiers),
        Job("compress_memories", "Compression", tasks.compress_memories),
        Job("consolidate_memories", "Consolidation of near-duplicates", tasks.consolidate_memories),
        Job("evict_memories", "Eviction over the limits", tasks.evict_memories),
        Job("clear_run_scratch", "Clearing finished runs' scratch notes", tasks.clear_run_scratch),
        Job("find_conflicts", "Finding repeats and conflicts", tasks.find_conflicts),
        Job("flush_memory_uses", "Writing the uses of memories", tasks.flush_memory_uses),
        Job(
            "prune_conversations",
            "Pruning conversations past their retention",
            tasks.prune_conversations,
        ),
        Job("fit_ranking", "Fitting the ranking to what agents used", "ops.fit_ranking"),
    ]
}


def label(state_name: str) -> str:
    """A job state's name in words ("decay_memories, part 1 of 2" -> "Confidence decay,
    part 1 of 2")."""
    name, _, rest = state_name.partition(", ")
    job = JOBS.get(name)
    words = job.label if job else name.replace("_", " ").capitalize()
    return f"{words}, {rest}" if rest else words
