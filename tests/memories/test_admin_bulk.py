"""The admin's bulk edits as background jobs (memories.admin.bulk): over the selection or,
with "Select all" (``select_across``), over every memory the list's filters match; the
jobs' read-only list with their progress and an undo; the project roles honoured."""

from __future__ import annotations

import pytest
from django.contrib.admin.helpers import ACTION_CHECKBOX_NAME
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.urls import reverse

from memories.admin.bulk import BULK_ACTIONS
from memories.admin.memories import MemoryAdmin
from memories.models import BulkEdit, BulkStatus, Membership, Memory, Role
from memories.services import bulk

pytestmark = pytest.mark.django_db

CHANGELIST = reverse("admin:memories_memory_changelist")
JOBS = reverse("admin:memories_bulkedit_changelist")


def test_the_memories_admin_offers_every_background_bulk_edit():
    assert all(action in MemoryAdmin.actions for action in BULK_ACTIONS)


@pytest.fixture
def listed(project, other_project, make_memory):
    ours = [make_memory(project=project, type="warning") for _ in range(3)]
    make_memory(project=project, type="pattern")
    theirs = make_memory(project=other_project, type="warning")
    return ours, theirs


def across(client, action, query="", **extra):
    """The action over every memory the list's filters match (Django's "Select all": the
    page's rows are ticked, and ``select_across`` says "all of them, every page")."""
    page = Memory.objects.order_by("-pk").values_list("pk", flat=True)[:1]
    return client.post(
        f"{CHANGELIST}{query}",
        {"action": action, "select_across": "1", "index": "0", ACTION_CHECKBOX_NAME: list(page),
         **extra},
        follow=True,
    )  # fmt: skip


def test_select_across_starts_one_job_over_the_whole_filter(admin_client, project, listed):
    ours, _ = listed
    response = across(admin_client, "bulk_pin", f"?project__id__exact={project.pk}&type=warning")
    job = BulkEdit.objects.get()
    assert f'Bulk edit <a href="{reverse("admin:memories_bulkedit_change", args=[job.pk])}"' in (
        response.text
    )
    assert (job.action, job.total, job.project) == ("pin", 3, project)
    assert sorted(job.items.values_list("memory_id", flat=True)) == sorted(m.pk for m in ours)
    job = bulk.bulk_edit_run(job_id=job.pk)
    assert Memory.objects.filter(pinned=True).count() == 3


def test_the_selection_alone_too(admin_client, listed):
    ours, _ = listed
    admin_client.post(
        CHANGELIST,
        {"action": "bulk_archive", ACTION_CHECKBOX_NAME: [ours[0].pk]},
        follow=True,
    )
    assert BulkEdit.objects.get().total == 1


def test_retag_and_tier_ask_first_then_start(admin_client, project, listed):
    query = f"?project__id__exact={project.pk}"
    page = across(admin_client, "bulk_retag", query)
    assert "Every memory the list's filters match" in page.text
    assert 'name="select_across" value="1"' in page.text
    assert not BulkEdit.objects.exists()
    across(admin_client, "bulk_retag", query, add="ledger", remove="", apply="Start")
    job = BulkEdit.objects.get()
    assert (job.total, job.parameters["add"]) == (4, ["ledger"])
    across(admin_client, "bulk_set_tier", query, tier="cold", apply="Start")
    assert BulkEdit.objects.get(action="set_tier").parameters["tier"] == "cold"


def test_a_reviewer_of_one_project_is_refused_a_filter_that_spans_another(
    client, project, other_project, listed
):
    staff = get_user_model().objects.create_user("staff", password="pw", is_staff=True)
    staff.user_permissions.add(
        *Permission.objects.filter(codename__in=["view_memory", "change_memory", "view_bulkedit"])
    )
    Membership.objects.create(user=staff, project=project, role=Role.REVIEWER)
    Membership.objects.create(user=staff, project=other_project, role=Role.VIEWER)
    client.force_login(staff)
    refused = across(client, "bulk_approve", "?type=warning")
    assert "you do not review" in refused.text
    assert f"project {other_project.pk}" in refused.text
    assert not BulkEdit.objects.exists()
    across(client, "bulk_approve", f"?type=warning&project__id__exact={project.pk}")
    assert BulkEdit.objects.get().total == 3
    # The jobs' list shows theirs, with its progress.
    page = client.get(JOBS).text
    assert "0 of 3 (0%)" in page


def test_the_jobs_list_is_read_only_and_undoes_a_finished_job_once(admin_client, project, listed):
    across(admin_client, "bulk_expire", f"?project__id__exact={project.pk}")
    job = bulk.bulk_edit_run(job_id=BulkEdit.objects.get().pk)
    assert not Memory.objects.filter(project=project, active=True).exists()
    page = admin_client.get(JOBS).text
    assert "4 of 4 (100%)" in page
    assert admin_client.get(reverse("admin:memories_bulkedit_add")).status_code == 403
    undo = {"action": "undo", ACTION_CHECKBOX_NAME: [job.pk]}
    admin_client.post(JOBS, undo, follow=True)
    undoing = BulkEdit.objects.get(undo_of=job)
    bulk.bulk_edit_run(job_id=undoing.pk)
    assert Memory.objects.filter(project=project, active=True).count() == 4
    assert BulkEdit.objects.get(pk=job.pk).status == BulkStatus.UNDONE
    again = admin_client.post(JOBS, undo, follow=True)
    assert "undone once" in again.text
    assert BulkEdit.objects.filter(undo_of=job).count() == 1
