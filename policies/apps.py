from __future__ import annotations

from typing import Any

from django.apps import AppConfig
from django.db.models.signals import post_migrate


def sync_beat_schedule(**kwargs: Any) -> None:
    """Copy the beat schedule declared in settings into the admin's periodic tasks, as beat
    itself does when it starts: visible (and pausable) from the first migrate on. A paused
    job stays paused: the copy sets the schedule and the task, never ``enabled``."""
    from celery import current_app
    from django.conf import settings
    from django_celery_beat.schedulers import ModelEntry

    for name, entry in settings.CELERY_BEAT_SCHEDULE.items():
        ModelEntry.from_entry(name, app=current_app, **entry)


class PoliciesConfig(AppConfig):
    name = "policies"

    def ready(self) -> None:
        from memories.hooks import memories_changed
        from policies.consolidation import queue_comparisons

        post_migrate.connect(sync_beat_schedule, sender=self)
        memories_changed.connect(queue_comparisons, dispatch_uid="policies.consolidation")
