"""The review pages in a real browser: sign in, act on the queue without a page reload,
bulk actions, inline edit, keyboard shortcuts and the context preview."""

from __future__ import annotations

import pytest

from knowledge.models import MemoryPair
from memories import services
from memories.models import Memory, ReviewStatus

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def waiting(project, make_memory, make_run):
    run = make_run(project=project, external_id="run-007")
    return [
        make_memory(
            project=project,
            content=f"Rule {number}: run the full test suite when changing src/core/.",
            tags=["src/core/**"],
            source_run=run,
        )
        for number in range(6)
    ]


def _row(page, memory):
    return page.locator(f"#memory-{memory.pk}")


def _mark_page(page):
    """A value that only survives as long as the page is not loaded again."""
    page.evaluate("window.__sameDocument = true")


def _same_page(page) -> bool:
    return page.evaluate("window.__sameDocument === true")


def test_approve_one_from_the_queue_without_a_reload(page, project, waiting, screenshot):
    page.goto(f"/review/projects/{project.slug}/queue/")
    screenshot("queue")
    _mark_page(page)
    target = waiting[2]
    _row(page, target).get_by_role("button", name="Approve").click()
    _row(page, target).wait_for(state="detached")
    assert _same_page(page)
    assert "Approved:" in page.locator("#messages").inner_text()
    assert page.locator("tr[data-memory]").count() == 5
    target.refresh_from_db()
    assert target.review_status == ReviewStatus.APPROVED
    screenshot("queue-after-approve")


def test_bulk_approve_three_then_reject_one(page, project, waiting, screenshot):
    page.goto(f"/review/projects/{project.slug}/queue/")
    _mark_page(page)
    chosen = waiting[:3]
    for memory in chosen:
        _row(page, memory).locator("input[name=ids]").check()
    page.get_by_role("button", name="Approve selected").click()
    for memory in chosen:
        _row(page, memory).wait_for(state="detached")
    assert "Approved 3 memories." in page.locator("#messages").inner_text()
    assert (
        Memory.objects.filter(pk__in=[m.pk for m in chosen], review_status="approved").count() == 3
    )

    rejected = waiting[4]
    _row(page, rejected).get_by_role("button", name="Reject").click()
    _row(page, rejected).wait_for(state="detached")
    assert _same_page(page)
    rejected.refresh_from_db()
    assert (rejected.review_status, rejected.active) == (ReviewStatus.REJECTED, False)
    screenshot("queue-after-bulk")


def test_edit_one_inline(page, project, waiting, screenshot):
    page.goto(f"/review/projects/{project.slug}/memories/")
    _mark_page(page)
    memory = waiting[1]
    _row(page, memory).get_by_role("link", name="Edit").click()
    editor = _row(page, memory).locator("textarea[name=content]")
    editor.wait_for()
    screenshot("inline-edit")
    editor.fill("Run the full test suite, and the migrations check, when changing src/core/.")
    _row(page, memory).locator("input[name=tags]").fill("src/core/**, migrations")
    _row(page, memory).get_by_role("button", name="Save").click()
    _row(page, memory).locator("text=and the migrations check").wait_for()
    assert _same_page(page)
    memory.refresh_from_db()
    assert memory.content.startswith("Run the full test suite, and the migrations check")
    assert memory.tags == ["src/core/**", "migrations"]


def test_keyboard_moves_and_approves(page, project, waiting):
    page.goto(f"/review/projects/{project.slug}/queue/")
    first = page.locator("tr[data-memory]").first
    first_id = int(first.get_attribute("data-memory"))
    page.keyboard.press("j")
    assert "current" in first.get_attribute("class")
    page.keyboard.press("a")
    page.locator(f"#memory-{first_id}").wait_for(state="detached")
    assert Memory.objects.get(pk=first_id).review_status == ReviewStatus.APPROVED


def test_filters_update_the_list_and_the_url(page, project, waiting, make_memory):
    make_memory(project=project, type="warning", content="Never truncate the shared staging db.")
    page.goto(f"/review/projects/{project.slug}/memories/")
    _mark_page(page)
    page.select_option("select[name=type]", "warning")
    page.wait_for_url("**type=warning**")
    page.locator("tr[data-memory]").first.wait_for()
    assert page.locator("tr[data-memory]").count() == 1
    assert _same_page(page)


def test_context_preview(page, project, waiting, reviewer, screenshot):
    from memories.actors import Actor

    services.memories_approve(memory_ids=[m.pk for m in waiting], actor=Actor.for_user(reviewer))
    page.goto(f"/review/projects/{project.slug}/preview/")
    page.fill("textarea[name=write_scope]", "src/core/invoices.py")
    page.fill("input[name=intent]", "add VAT rounding")
    page.fill("input[name=token_budget]", "60")
    page.get_by_role("button", name="Preview").click()
    prompt = page.locator("#prompt-text")
    prompt.wait_for()
    assert prompt.inner_text().startswith("## Memories\n- [pattern] Rule")
    assert int(page.locator("#total-tokens").inner_text()) <= 60
    assert page.locator("table.dropped tbody tr").count() >= 1
    screenshot("context-preview")


def test_every_page_renders(page, project, waiting, make_run, screenshot):
    run = make_run(project=project, external_id="run-100", task_title="Add VAT rounding")
    services.run_give_memories(run=run, ranked=[(waiting[0].pk, 0.9)])
    for name, url in [
        ("dashboard", "/review/"),
        ("queue-all-projects", "/review/queue/"),
        ("memories", f"/review/projects/{project.slug}/memories/"),
        ("memory-detail", f"/review/memories/{waiting[0].pk}/"),
        ("runs", f"/review/projects/{project.slug}/runs/"),
    ]:
        response = page.goto(url)
        assert response.status == 200, url
        assert page.locator("h1").count() >= 1
        screenshot(name)


def test_a_possible_conflict_side_by_side_decided_from_the_keyboard(
    page, project, make_memory, screenshot
):
    older = make_memory(
        project=project, content="Calls to the payments API time out after 10 seconds.",
        tags=["src/payments/**"],
    )  # fmt: skip
    newer = make_memory(
        project=project, content="Calls to the payments API time out after 30 seconds.",
        tags=["src/payments/**"],
    )  # fmt: skip
    pair = MemoryPair.objects.get()
    page.goto(f"/review/projects/{project.slug}/queue/")
    flag = page.locator(f"#memory-{newer.pk} .flag a")
    assert flag.inner_text() == f"may conflict with #{older.pk}"
    flag.click()
    page.wait_for_url(f"**/review/conflicts/{pair.pk}/")
    assert page.locator(".side").count() == 2
    assert "10 s" in page.locator(".evidence-box").inner_text()
    screenshot("conflict-pair")
    page.set_viewport_size({"width": 390, "height": 844})
    screenshot("conflict-pair-390")
    # At phone width the sides stack: nothing scrolls sideways.
    wide = page.evaluate(
        "[...document.querySelectorAll('main *')].filter(e => e.getBoundingClientRect().right"
        " > window.innerWidth + 1).map(e => e.tagName + '.' + e.className).slice(0, 5)"
    )
    assert wide == []
    page.set_viewport_size({"width": 1400, "height": 900})
    page.keyboard.press("2")  # keep the right one
    page.wait_for_selector(".message.success")
    assert f"Kept memory {newer.pk}" in page.locator(".messages").inner_text()
    stored = Memory.objects.get(pk=older.pk)
    assert (stored.active, stored.superseded_by_id) == (False, newer.pk)
    page.goto(f"/review/projects/{project.slug}/conflicts/?status=resolved")
    assert page.locator(f"#pair-{pair.pk}").count() == 1
    screenshot("conflicts-resolved")
