"""The queue at volume: keyset pages that never skip a memory, a page that refills after
an action with true counts, and undo through history."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from memories.models import Memory, MemoryEvent, ReviewStatus
from review.views.parts import PAGE_SIZE
from tests.review.conftest import HTMX

pytestmark = pytest.mark.django_db


@pytest.fixture
def many(project, make_memory):
    """A page and a half of memories waiting for review, newest last."""
    return [make_memory(project=project, content=f"Waiting {n}") for n in range(PAGE_SIZE + 20)]


def ids_on(html: str) -> list[int]:
    return [int(pk) for pk in re.findall(r'<tr id="memory-(\d+)" data-memory', html)]


def next_link(html: str) -> str | None:
    found = re.search(r'href="(\?order=[^"]*after=[^"]*)" rel="next"', html)
    return found.group(1).replace("&amp;", "&") if found else None


def test_paging_after_approving_a_whole_page_skips_nothing(reviewer_client, project, many):
    url = reverse("review:project-queue", args=[project.slug])
    first = reviewer_client.get(url).text
    shown = ids_on(first)
    assert len(shown) == PAGE_SIZE
    assert f"<strong>{PAGE_SIZE + 20}</strong> waiting" in first
    # Approve the whole first page at once, as the bulk form does from that page.
    refilled = reviewer_client.post(
        reverse("review:memory-bulk"),
        {"action": "approve", "ids": shown, "view": "queue", "next": url},
        **HTMX,
    ).text
    rest = ids_on(refilled)
    assert len(rest) == 20  # the page refilled with the ones after it
    assert "<strong>20</strong> waiting" in refilled
    assert not set(rest) & set(shown)
    assert set(rest) | set(shown) == {m.pk for m in many}


def test_next_page_starts_right_after_the_last_row_even_when_rows_left(
    reviewer_client, reviewer_actor, project, many
):
    from memories import services

    url = reverse("review:project-queue", args=[project.slug])
    first = reviewer_client.get(url).text
    link = next_link(first)
    assert link is not None
    # Someone approves ten of the first page meanwhile: the next page still starts after
    # the last row this reviewer saw.
    services.memories_approve(memory_ids=ids_on(first)[:10], actor=reviewer_actor)
    second = reviewer_client.get(url + link).text
    assert ids_on(second) == sorted({m.pk for m in many} - set(ids_on(first)), reverse=True)
    assert next_link(second) is None
    assert "First page" in second


def test_a_cursor_that_is_not_ours_gives_the_first_page(reviewer_client, project, many):
    url = reverse("review:project-queue", args=[project.slug])
    page = reviewer_client.get(url + "?after=not-a-cursor").text
    assert len(ids_on(page)) == PAGE_SIZE
    assert "First page" not in page


def test_undo_puts_an_approval_back_exactly(reviewer_client, project, make_memory):
    memory = make_memory(project=project, content="undo me")
    before = Memory.objects.get(pk=memory.pk)
    done = reviewer_client.post(
        reverse("review:approve", args=[memory.pk]), {"view": "queue"}, **HTMX
    ).text
    events = re.search(r'name="events" value="([\d,]+)"', done).group(1)
    assert Memory.objects.get(pk=memory.pk).review_status == ReviewStatus.APPROVED
    undone = reviewer_client.post(
        reverse("review:undo"), {"events": events, "view": "queue"}, **HTMX
    ).text
    assert "Undone: 1 memory as before." in undone
    after = Memory.objects.get(pk=memory.pk)
    fields = ("review_status", "confidence", "approved_by_id", "approved_at", "active")
    assert [getattr(after, f) for f in fields] == [getattr(before, f) for f in fields]
    assert f'id="memory-{memory.pk}"' in undone  # back in the queue
    assert MemoryEvent.objects.filter(memory=memory, action="undone").count() == 1


def test_undo_of_a_bulk_rejection_and_not_of_what_changed_since(
    reviewer_client, reviewer_actor, project, make_memory
):
    from memories import services

    first, second = make_memory(project=project), make_memory(project=project)
    done = reviewer_client.post(
        reverse("review:memory-bulk"),
        {"action": "reject", "ids": [first.pk, second.pk], "view": "list"},
        **HTMX,
    ).text
    events = re.search(r'name="events" value="([\d,]+)"', done).group(1)
    services.memories_set_pinned(memory_ids=[second.pk], pinned=True, actor=reviewer_actor)
    undone = reviewer_client.post(reverse("review:undo"), {"events": events}, **HTMX).text
    assert Memory.objects.get(pk=first.pk).review_status == ReviewStatus.PENDING
    assert Memory.objects.get(pk=second.pk).review_status == ReviewStatus.REJECTED
    assert f"Memory {second.pk} was not put back: it changed since." in undone


def test_the_empty_selection_error_is_marked_for_the_page_to_clear(reviewer_client):
    response = reviewer_client.post(reverse("review:memory-bulk"), {"action": "approve"}, **HTMX)
    assert 'class="message error selection"' in response.text
