"""Bulk edits in a real browser: "Select all matching" keeps the filter htmx last applied,
the page counts and starts the job, the job's page follows it without a reload and stops
polling once it is done, and its Undo takes everything back."""

from __future__ import annotations

import pytest

from config.celery import app
from memories.models import BulkEdit, BulkStatus, Memory
from memories.services import bulk

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def listed(project, make_memory):
    warnings = [make_memory(project=project, type="warning") for _ in range(3)]
    patterns = [make_memory(project=project, type="pattern") for _ in range(2)]
    return warnings, patterns


@pytest.fixture
def eager():
    """Celery runs the job inside the request that starts it (CELERY_TASK_ALWAYS_EAGER)."""
    app.conf.task_always_eager = True
    yield
    app.conf.task_always_eager = False


def test_select_all_matching_keeps_the_filter_and_pins_them_all(
    page, project, listed, eager, screenshot
):
    warnings, _ = listed
    page.goto(f"/review/projects/{project.slug}/memories/")
    page.select_option("select[name=type]", "warning")
    page.wait_for_url("**type=warning**")
    page.get_by_role("link", name="Select all matching this filter…").click()
    page.wait_for_url("**/memories/bulk-edit/?**type=warning**")
    assert "3 memories match" in page.locator("main").inner_text()
    screenshot("bulk-edit")
    page.get_by_role("radio", name="Pin", exact=True).check()
    page.get_by_role("button", name="Change all 3").click()
    page.wait_for_url("**/review/jobs/*/")
    assert "3 of 3 dealt with (100%), 3 changed" in page.locator("#job").inner_text()
    screenshot("bulk-job-done")
    assert {m.pk for m in Memory.objects.filter(pinned=True)} == {m.pk for m in warnings}


def test_the_job_page_follows_the_job_then_stops_and_undoes_it(
    page, project, listed, reviewer_actor, eager, screenshot
):
    job = bulk.bulk_edit_start(
        memories=Memory.objects.filter(project=project),
        action="archive",
        actor=reviewer_actor,
        enqueue=False,
    )
    page.goto(f"/review/jobs/{job.pk}/")
    assert page.locator("#job[data-polling]").count() == 1
    assert "Queued" in page.locator("#job").inner_text()
    page.evaluate("window.__sameDocument = true")
    screenshot("bulk-job-queued")
    bulk.bulk_edit_run(job_id=job.pk, batch_size=2, batches=1)
    page.locator("#job", has_text="2 of 5 dealt with").wait_for()
    bulk.bulk_edit_run(job_id=job.pk)
    page.locator("#job", has_text="5 of 5 dealt with (100%)").wait_for()
    assert page.evaluate("window.__sameDocument === true")  # no reload
    assert page.locator("#job[data-polling]").count() == 0
    # Polling stopped: nothing asks for the job any more.
    asked = []
    page.on("request", lambda request: asked.append(request.url))
    page.wait_for_timeout(2500)
    assert not [url for url in asked if f"/review/jobs/{job.pk}/" in url]
    assert Memory.objects.filter(active=True).count() == 0
    page.get_by_role("button", name="Undo all 5 changes").click()
    undo = BulkEdit.objects.get(undo_of=job)
    page.wait_for_url(f"**/review/jobs/{undo.pk}/")
    assert "5 changed" in page.locator("#job").inner_text()
    assert BulkEdit.objects.get(pk=job.pk).status == BulkStatus.UNDONE
    assert Memory.objects.filter(active=True).count() == 5
    screenshot("bulk-job-undone")
