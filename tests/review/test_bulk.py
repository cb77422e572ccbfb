"""Bulk edits from the review pages: "Select all matching" on a project's filtered list and
on a queue, the page that counts them and starts the job, the job's page (polled by htmx
while it runs, still once done, with one Undo), and who may do it."""

from __future__ import annotations

import pytest
from django.urls import reverse

from memories.actors import Actor
from memories.models import (
    BulkEdit,
    BulkStatus,
    Membership,
    Memory,
    MemoryEvent,
    ReviewStatus,
    Role,
)
from memories.services import bulk
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db

HTMX_JOB = {"HTTP_HX_REQUEST": "true", "HTTP_HX_TARGET": "job"}


@pytest.fixture
def listed(project, make_memory):
    """Four warnings tagged billing and two patterns in the project."""
    warnings = [make_memory(project=project, type="warning", tags=["billing"]) for _ in range(4)]
    patterns = [make_memory(project=project, type="pattern") for _ in range(2)]
    return warnings, patterns


def edit_url(project, query="type=warning&tag=billing"):
    return reverse("review:bulk-edit", args=[project.slug]) + (f"?{query}" if query else "")


def person(project, role):
    user = UserFactory()
    if role:
        Membership.objects.create(user=user, project=project, role=role)
    return user


def test_the_list_offers_every_matching_memory_to_a_reviewer_only(client, project, listed):
    reviewer = person(project, Role.REVIEWER)
    client.force_login(reviewer)
    page = client.get(reverse("review:memories", args=[project.slug]) + "?type=warning&page=1")
    assert f'href="{edit_url(project, "type=warning")}"' in page.text
    assert "Select all matching this filter" in page.text
    client.force_login(person(project, Role.VIEWER))
    page = client.get(reverse("review:memories", args=[project.slug]) + "?type=warning")
    assert "Select all matching" not in page.text


def test_the_page_counts_what_matches_and_starts_one_job_over_exactly_that(client, project, listed):
    warnings, _ = listed
    client.force_login(person(project, Role.REVIEWER))
    page = client.get(edit_url(project))
    assert "<strong>4</strong> memories match" in page.text
    assert "Change all 4" in page.text
    response = client.post(edit_url(project), {"action": "pin"})
    job = BulkEdit.objects.get()
    assert response.status_code == 302
    assert response["Location"] == reverse("review:bulk-job", args=[job.pk])
    assert (job.project, job.action, job.total, job.status) == (project, "pin", 4, "queued")
    assert sorted(job.items.values_list("memory_id", flat=True)) == sorted(m.pk for m in warnings)
    assert "tag billing" in job.parameters["filter"]


def test_a_retag_needs_its_tags_and_says_so_on_the_form(client, project, listed):
    client.force_login(person(project, Role.REVIEWER))
    page = client.post(edit_url(project), {"action": "retag"})
    assert page.status_code == 200
    assert "Name tags to add, to remove, or both." in page.text
    assert not BulkEdit.objects.exists()
    client.post(edit_url(project), {"action": "retag", "add": "ledger, src/api/**"})
    assert BulkEdit.objects.get().parameters["add"] == ["ledger", "src/api/**"]


def test_over_the_cap_the_page_says_to_narrow_the_filter(client, project, listed, settings):
    settings.BULK_EDIT_MAX_MEMORIES = 3
    client.force_login(person(project, Role.REVIEWER))
    page = client.get(edit_url(project))
    assert "More than 3 memories match" in page.text
    assert "Narrow the filter" in page.text
    assert "Change all" not in page.text
    page = client.post(edit_url(project), {"action": "pin"})
    assert "Narrow the filter" in page.text
    assert not BulkEdit.objects.exists()
    assert "Change all 2" in client.get(edit_url(project, "type=pattern")).text


def test_the_job_page_polls_while_it_runs_and_stops_when_done(client, project, listed):
    client.force_login(person(project, Role.REVIEWER))
    client.post(edit_url(project), {"action": "archive"})
    job = BulkEdit.objects.get()
    url = reverse("review:bulk-job", args=[job.pk])
    page = client.get(url)
    assert 'hx-trigger="every 2s"' in page.text
    assert "Queued" in page.text
    bulk.bulk_edit_run(job_id=job.pk, batch_size=3, batches=1)
    part = client.get(url, **HTMX_JOB)
    assert part.text.lstrip().startswith('<div id="job"')
    assert "<html" not in part.text
    assert 'hx-trigger="every 2s"' in part.text
    assert "3 of 4 dealt with" in part.text
    assert "Undo" not in part.text
    bulk.bulk_edit_run(job_id=job.pk, batch_size=3)
    part = client.get(url, **HTMX_JOB)
    assert "hx-trigger" not in part.text
    assert "4 of 4 dealt with (100%), 4 changed" in part.text
    assert "Undo all 4 changes" in part.text


def test_one_undo_from_the_job_page_and_a_second_is_refused(client, project, listed):
    warnings, _ = listed
    client.force_login(person(project, Role.REVIEWER))
    client.post(edit_url(project), {"action": "approve"})
    job = bulk.bulk_edit_run(job_id=BulkEdit.objects.get().pk)
    assert Memory.objects.filter(review_status=ReviewStatus.APPROVED).count() == 4
    response = client.post(reverse("review:bulk-job-undo", args=[job.pk]))
    undo = BulkEdit.objects.get(undo_of=job)
    assert response["Location"] == reverse("review:bulk-job", args=[undo.pk])
    bulk.bulk_edit_run(job_id=undo.pk)
    assert not Memory.objects.filter(review_status=ReviewStatus.APPROVED).exists()
    again = client.post(reverse("review:bulk-job-undo", args=[job.pk]), follow=True)
    assert "a bulk edit is undone once" in again.text
    assert BulkEdit.objects.filter(undo_of=job).count() == 1
    page = client.get(reverse("review:bulk-job", args=[job.pk])).text
    assert "Undone by" in page
    assert "Undo all" not in page
    assert MemoryEvent.objects.filter(action="undone").count() == len(warnings)


def test_failures_are_listed_on_the_job_page(client, project, listed, settings):
    settings.MEMORY_MAX_TAGS = 1
    client.force_login(person(project, Role.REVIEWER))
    client.post(edit_url(project), {"action": "retag", "add": "ledger"})
    job = bulk.bulk_edit_run(job_id=BulkEdit.objects.get().pk)
    assert (job.failed, job.changed) == (4, 0)
    page = client.get(reverse("review:bulk-job", args=[job.pk])).text
    assert "4 failed" in page
    assert "Not changed" in page
    assert "Undo all" not in page


def test_a_reviewer_of_project_a_cannot_bulk_edit_project_b(
    client, project, other_project, listed, make_memory
):
    make_memory(project=other_project, type="warning", tags=["billing"])
    reviewer = person(project, Role.REVIEWER)
    client.force_login(reviewer)
    assert client.get(edit_url(other_project)).status_code == 404
    assert client.post(edit_url(other_project), {"action": "pin"}).status_code == 404
    Membership.objects.create(user=reviewer, project=other_project, role=Role.VIEWER)
    assert client.post(edit_url(other_project), {"action": "pin"}).status_code == 403
    assert not BulkEdit.objects.exists()
    # Nor the queue of every project: they do not review all they see.
    every = reverse("review:queue-bulk-edit")
    page = client.get(every)
    assert "open a project's queue" in page.text
    client.post(every, {"action": "approve"})
    assert not BulkEdit.objects.exists()
    assert not Memory.objects.filter(review_status=ReviewStatus.APPROVED).exists()
    # A job of project B is not theirs to undo, nor (without a role) to see.
    theirs = bulk.bulk_edit_start(
        memories=other_project.memories.all(),
        action="pin",
        actor=Actor.for_user(person(other_project, Role.REVIEWER)),
        project=other_project,
    )
    assert client.post(reverse("review:bulk-job-undo", args=[theirs.pk])).status_code == 403
    Membership.objects.filter(user=reviewer, project=other_project).delete()
    assert client.get(reverse("review:bulk-job", args=[theirs.pk])).status_code == 404


def test_a_viewer_cannot_at_all(client, project, listed):
    client.force_login(person(project, Role.VIEWER))
    assert client.get(edit_url(project)).status_code == 403
    assert client.post(edit_url(project), {"action": "pin"}).status_code == 403
    assert not BulkEdit.objects.exists()


def test_a_project_queue_approves_everything_waiting(client, project, listed):
    client.force_login(person(project, Role.REVIEWER))
    queue = client.get(reverse("review:project-queue", args=[project.slug])).text
    url = reverse("review:project-queue-bulk-edit", args=[project.slug])
    assert f'href="{url}"' in queue
    assert "<strong>6</strong> memories match" in client.get(url).text
    client.post(url, {"action": "approve"})
    job = bulk.bulk_edit_run(job_id=BulkEdit.objects.get().pk)
    assert (job.status, job.changed) == (BulkStatus.DONE, 6)
    assert not Memory.objects.exclude(review_status=ReviewStatus.APPROVED).exists()


def test_a_job_over_several_projects_is_shown_only_to_who_reviews_them_all(
    client, project, other_project, make_memory
):
    from django.contrib.auth.models import Permission

    make_memory(project=project)
    make_memory(project=other_project)
    starter = person(project, Role.REVIEWER)
    Membership.objects.create(user=starter, project=other_project, role=Role.REVIEWER)
    job = bulk.bulk_edit_run(
        job_id=bulk.bulk_edit_start(
            memories=Memory.objects.filter(project__in=[project, other_project]),
            action="pin",
            actor=Actor.for_user(starter),
            enqueue=False,
        ).pk
    )
    assert job.project_id is None
    page = reverse("review:bulk-job", args=[job.pk])
    undo = reverse("review:bulk-job-undo", args=[job.pk])
    global_reviewer = person(project, Role.REVIEWER)  # of one of the two, and of globals
    global_reviewer.user_permissions.add(Permission.objects.get(codename="review_global_memory"))
    client.force_login(global_reviewer)
    assert client.get(page).status_code == 404
    assert client.post(undo).status_code == 404
    both = person(project, Role.REVIEWER)
    Membership.objects.create(user=both, project=other_project, role=Role.REVIEWER)
    client.force_login(both)
    assert client.get(page).status_code == 200
    assert client.post(undo).status_code == 403  # the one who started it undoes it
    assert not BulkEdit.objects.filter(undo_of=job).exists()
    client.force_login(starter)
    assert client.post(undo).status_code == 302
    assert BulkEdit.objects.filter(undo_of=job).exists()
