"""A person runs any lifecycle job now: the command and the admin's Run now."""

from __future__ import annotations

import pytest
from django.contrib.admin.helpers import ACTION_CHECKBOX_NAME
from django.core.management import CommandError, call_command

from policies.jobs import JOBS, label
from policies.models import JobState

pytestmark = pytest.mark.django_db


def test_the_command_lists_the_jobs_in_words(capsys):
    call_command("run_job")
    out = capsys.readouterr().out
    for job in JOBS.values():
        assert job.name in out
        assert job.label in out


def test_the_command_runs_a_job_and_records_it(capsys, project, make_memory):
    make_memory(project=project)
    call_command("run_job", "decay_memories", "update_tiers")
    out = capsys.readouterr().out
    assert "Confidence decay (decay_memories): {'changed'" in out
    assert JobState.objects.get(name="decay_memories").last_finished_at is not None
    assert JobState.objects.get(name="update_tiers").last_finished_at is not None


def test_an_unknown_job_names_the_real_ones():
    with pytest.raises(CommandError, match="No job 'decay'; the jobs are: expire_memories"):
        call_command("run_job", "decay")


def test_every_job_runs_with_all(capsys):
    call_command("run_job", "--all")
    assert capsys.readouterr().out.count("\n") == len(JOBS)


def test_job_names_are_words():
    assert label("decay_memories") == "Confidence decay"
    assert label("decay_memories, part 2 of 3") == "Confidence decay, part 2 of 3"
    assert label("something_new") == "Something new"


def test_the_admin_runs_the_selected_jobs_now(admin_client):
    JobState.objects.create(name="update_tiers")
    response = admin_client.post(
        "/admin/policies/jobstate/",
        {"action": "run_now", ACTION_CHECKBOX_NAME: ["update_tiers"]},
        follow=True,
    )
    assert "Hot, warm and cold tiers: {" in response.text
    assert JobState.objects.get(name="update_tiers").last_finished_at is not None
