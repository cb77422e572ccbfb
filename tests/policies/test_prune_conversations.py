"""The retention job of conversations on Celery: registered, scheduled daily, recorded."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.conf import settings
from django.utils import timezone

from people import conversations
from people.conversations import NewMessage
from people.models import Conversation
from policies import tasks
from policies.jobs import JOBS
from policies.models import JobState

pytestmark = pytest.mark.django_db


def test_it_is_a_job_and_runs_daily():
    assert JOBS["prune_conversations"].task is tasks.prune_conversations
    entry = settings.CELERY_BEAT_SCHEDULE["prune-conversations"]
    assert (entry["task"], entry["schedule"]) == ("policies.prune_conversations", 24 * 60 * 60)
    assert tasks.prune_conversations.acks_late


def test_the_task_prunes_and_records_what_it_did(project):
    long_ago = timezone.now() - timedelta(days=40)
    conversations.conversation_save(
        project=project,
        user_id="ana",
        agent_id="a",
        messages=[NewMessage("user", "old", long_ago), NewMessage("user", "older", long_ago)],
    )
    assert tasks.prune_conversations.apply().get() == {
        "changed": 2,
        "batches": 2,
        "finished": True,
    }
    assert not Conversation.objects.exists()
    state = JobState.objects.get(name="prune_conversations")
    assert state.last_report == {"messages": 2, "conversations": 1, "busy": 0}
    assert state.last_changed == 2
    assert tasks.prune_conversations.apply().get()["changed"] == 0
