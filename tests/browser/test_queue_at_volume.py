"""The queue as a reviewer uses it at volume, in a real browser: bulk-approving a full page
refills it (counts true, nothing skipped), undo, the selection, the keys, and a phone."""

from __future__ import annotations

import pytest

from memories.models import Memory, ReviewStatus
from review.views.parts import PAGE_SIZE

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def crowd(project, make_memory):
    return [
        make_memory(project=project, content=f"Memory {n} waits for a reviewer's judgement.")
        for n in range(PAGE_SIZE + 15)
    ]


def shown(page) -> list[int]:
    return [int(pk) for pk in page.locator("tr[data-memory]").evaluate_all(
        "rows => rows.map(r => r.dataset.memory)")]  # fmt: skip


def test_bulk_approving_a_full_page_refills_it(page, project, crowd, screenshot):
    page.goto(f"/review/projects/{project.slug}/queue/")
    first = shown(page)
    assert len(first) == PAGE_SIZE
    assert page.locator("#waiting-count").inner_text().startswith(str(PAGE_SIZE + 15))
    page.locator("[data-select-all]").check()
    assert page.locator("[data-selected-count]").inner_text() == str(PAGE_SIZE)
    assert page.locator("tr.selected").count() == PAGE_SIZE
    screenshot("queue-volume-selected")
    page.get_by_role("button", name="Approve selected").click()
    page.locator("#waiting-count").get_by_text("15", exact=True).wait_for()
    rest = shown(page)
    assert len(rest) == 15
    assert not set(rest) & set(first)
    assert set(rest) | set(first) == {m.pk for m in crowd}
    assert not page.locator("[data-select-all]").is_checked()
    assert page.locator("[data-selected-count]").inner_text() == "0"
    assert page.locator("a[rel=next]").count() == 0  # nothing skipped, nothing left behind
    assert Memory.objects.filter(review_status=ReviewStatus.APPROVED).count() == PAGE_SIZE
    screenshot("queue-volume-refilled")


def test_undo_from_the_message(page, project, crowd, screenshot):
    page.goto(f"/review/projects/{project.slug}/queue/")
    target = shown(page)[0]
    page.locator(f"#memory-{target}").get_by_role("button", name="Approve").click()
    page.locator(f"#memory-{target}").wait_for(state="detached")
    screenshot("queue-undo-offered")
    page.locator("#messages").get_by_role("button", name="Undo").click()
    page.locator(f"#memory-{target}").wait_for()
    assert "Undone: 1 memory as before." in page.locator("#messages").inner_text()
    assert Memory.objects.get(pk=target).review_status == ReviewStatus.PENDING


def test_an_empty_selection_error_goes_when_rows_are_selected(page, project, crowd):
    page.goto(f"/review/projects/{project.slug}/queue/")
    page.get_by_role("button", name="Approve selected").click()
    error = page.locator(".message.selection")
    error.wait_for()
    page.locator("input[name=ids]").first.check()
    error.wait_for(state="detached")
    assert page.locator("tr.selected").count() == 1


def test_keys_help_edit_and_escape(page, project, crowd, screenshot):
    page.goto(f"/review/projects/{project.slug}/queue/")
    help_box = page.locator("#shortcut-help")
    assert help_box.is_hidden()
    page.keyboard.press("?")
    help_box.wait_for(state="visible")
    screenshot("queue-keys")
    page.keyboard.press("Escape")
    help_box.wait_for(state="hidden")
    page.keyboard.press("j")
    first = page.locator("tr[data-memory]").first
    assert "Memory" in page.locator("#current-row").inner_text()  # told to screen readers
    memory_id = first.get_attribute("data-memory")
    page.keyboard.press("e")
    editor = page.locator(f"#memory-{memory_id} textarea[name=content]")
    editor.wait_for()
    assert editor.evaluate("el => document.activeElement === el")
    page.keyboard.press("Escape")
    page.locator(f"#memory-{memory_id} textarea").wait_for(state="detached")
    assert page.locator(f"#memory-{memory_id}").get_by_role("button", name="Approve").is_visible()


def test_the_queue_on_a_phone(browser, live_server, reviewer, project, crowd):
    context = browser.new_context(base_url=live_server.url, viewport={"width": 390, "height": 844})
    page = context.new_page()
    page.goto("/accounts/login/")
    page.fill("#id_username", reviewer.username)
    page.fill("#id_password", "pass-for-tests")
    page.click("button[type=submit]")
    page.wait_for_url("**/review/")
    page.goto(f"/review/projects/{project.slug}/queue/")
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= 390, f"the page scrolls sideways ({width} px wide)"
    card = page.locator("tr[data-memory]").first
    for button in card.locator("button, a.button, input[type=checkbox]").all():
        box = button.bounding_box()
        assert box is not None
        assert box["x"] + box["width"] <= 390
        assert box["height"] >= 44, button.inner_text()
        assert box["width"] >= 44, button.inner_text()
    page.screenshot(path="var/screenshots/queue-390.png", full_page=False)
    page.locator("tr[data-memory]").nth(1).screenshot(path="var/screenshots/queue-390-card.png")
    target = int(card.get_attribute("data-memory"))
    card.get_by_role("button", name="Approve").click()
    page.locator(f"#memory-{target}").wait_for(state="detached")
    assert Memory.objects.get(pk=target).review_status == ReviewStatus.APPROVED
    context.close()
