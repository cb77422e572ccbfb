"""The pages that explain themselves, in a real browser: a memory's page after an approval,
the preview's limit, a run's page."""

from __future__ import annotations

import pytest

from memories import services
from memories.models import Memory, ReviewStatus
from tests.factories import distinct_sentence

pytestmark = pytest.mark.django_db(transaction=True)


def test_approving_on_a_memorys_page_refreshes_its_fields_and_history(
    page, project, make_memory, screenshot
):
    memory = make_memory(project=project, content="Refresh me after approval.")
    page.goto(f"/review/memories/{memory.pk}/")
    assert page.locator("dl.fields").get_by_text("pending").count() == 1
    page.get_by_role("button", name="Approve").click()
    page.locator(".timeline strong", has_text="approved").wait_for()
    assert "approved by" in page.locator("dl.fields").inner_text()
    assert Memory.objects.get(pk=memory.pk).review_status == ReviewStatus.APPROVED
    screenshot("memory-after-approve")


def test_the_preview_limit_is_shown_and_changed(page, project, make_memory, reviewer_actor):
    for n in range(5):
        memory = make_memory(
            project=project, content=f"{distinct_sentence(n)} The ledger stays balanced."
        )
        services.memory_approve(memory=memory, actor=reviewer_actor)
    page.goto(f"/review/projects/{project.slug}/preview/")
    page.fill("input[name=intent]", "ledger")
    page.fill("input[name=limit]", "2")
    page.get_by_role("button", name="Preview").click()
    page.locator("#limit-note").wait_for()
    assert "At most 2 memories are given" in page.locator("#limit-note").inner_text()
    assert page.locator("table.chosen tbody tr").count() == 2
    assert page.locator("table.dropped").get_by_text("limit").count() >= 1
    assert page.locator("#reasons").get_by_text("below_confidence").count() == 1


def test_a_run_page_shows_what_its_outcome_did(
    page, project, make_memory, make_run, system_actor, screenshot
):
    memory = make_memory(project=project, content="Given to the run.")
    run = make_run(project=project, external_id="run-shown")
    services.run_give_memories(run=run, ranked=[(memory.pk, 0.75)])
    services.run_record_outcome(run=run, outcome="failed", actor=system_actor)
    page.goto(f"/review/projects/{project.slug}/runs/")
    page.get_by_role("link", name="run-shown").click()
    page.wait_for_url(f"**/runs/{run.pk}/")
    row = page.locator("table.given-memories tbody tr").first
    assert "0.750" in row.inner_text()
    assert "0.50 → 0.4" in row.inner_text()
    screenshot("run-page")
