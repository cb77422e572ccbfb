"""The review pages of repeats and conflicts: marks in the queue, the list, the pair page."""

from __future__ import annotations

import pytest
from django.urls import reverse

from knowledge.models import MemoryPair
from memories import services
from memories.models import Memory
from policies.conflicts import find_conflicts
from policies.runner import record_run
from review.templatetags.review_tags import marked

pytestmark = pytest.mark.django_db

TEN = "Calls to the payments API time out after 10 seconds."
THIRTY = "Calls to the payments API time out after 30 seconds."


@pytest.fixture
def pair(project, make_memory):
    make_memory(project=project, content=TEN, tags=["src/payments/**"])
    make_memory(project=project, content=THIRTY, tags=["src/payments/**"])
    return MemoryPair.objects.get()


def test_the_queue_marks_memories_in_an_open_pair(reviewer_client, project, pair):
    page = reviewer_client.get(reverse("review:project-queue", args=[project.slug])).text
    assert f"may conflict with #{pair.first_id}" in page
    assert f"may conflict with #{pair.second_id}" in page
    assert reverse("review:conflict", args=[pair.pk]) in page


def test_the_list_shows_both_sides_and_why(reviewer_client, project, pair):
    page = reviewer_client.get(reverse("review:project-conflicts", args=[project.slug])).text
    assert TEN in page
    assert THIRTY in page
    assert "<strong>quantity</strong>" in page
    assert "<q>10 seconds</q> ↔ <q>30 seconds</q>" in page
    assert 'data-key="1"' in page
    assert "Keep both" in page


def test_the_list_says_what_the_last_walk_compared_and_why(reviewer_client, project, pair):
    url = reverse("review:project-conflicts", args=[project.slug])
    assert "The last walk" not in reviewer_client.get(url).text
    record_run(find_conflicts)
    page = reviewer_client.get(url).text
    assert "The last walk" in page
    assert "conflict: quantity" in page


def test_the_pair_page_shows_each_side_with_what_weighs_it(
    reviewer_client, project, pair, make_run
):
    run = make_run(project=project)
    services.run_give_memories(run=run, ranked=[(pair.first_id, 1.0)])
    response = reviewer_client.get(reverse("review:conflict", args=[pair.pk]))
    page = response.text
    assert response.status_code == 200
    assert "Possible conflict: memories" in page
    assert page.count("Keep this one") == 2
    assert "Merge into one" in page
    assert "1 running" in page  # the run given the first memory, with its outcome
    assert page.count("Latest history") == 2
    assert "created" in page


def test_a_reader_sees_the_pair_but_no_actions(reader_client, pair):
    page = reader_client.get(reverse("review:conflict", args=[pair.pk])).text
    assert "Keep this one" not in page
    decide = reader_client.post(
        reverse("review:conflict-decide", args=[pair.pk]),
        {"action": "keep", "memory": pair.first_id},
    )
    assert decide.status_code == 403
    assert MemoryPair.objects.get(pk=pair.pk).status == "open"


def test_keep_this_one_supersedes_the_other(reviewer_client, pair):
    response = reviewer_client.post(
        reverse("review:conflict-decide", args=[pair.pk]),
        {"action": "keep", "memory": pair.second_id},
        follow=True,
    )
    assert f"Kept memory {pair.second_id}" in response.text
    loser = Memory.objects.get(pk=pair.first_id)
    assert (loser.active, loser.superseded_by_id) == (False, pair.second_id)
    assert "Decided:" in response.text


def test_merge_goes_to_the_new_memory(reviewer_client, pair):
    response = reviewer_client.post(
        reverse("review:conflict-decide", args=[pair.pk]),
        {"action": "merge", "content": "Payments API calls time out after 30 s."},
    )
    merged = MemoryPair.objects.get(pk=pair.pk).outcome_memory_id
    assert response.url == reverse("review:memory", args=[merged])
    assert Memory.objects.get(pk=merged).content == "Payments API calls time out after 30 s."


def test_a_bad_decision_says_what_is_wrong_and_changes_nothing(reviewer_client, pair):
    response = reviewer_client.post(
        reverse("review:conflict-decide", args=[pair.pk]),
        {"action": "keep", "memory": "12345"},
        follow=True,
    )
    assert "Name one of this pair" in response.text
    assert MemoryPair.objects.get(pk=pair.pk).status == "open"


def test_bulk_keeps_the_newer_of_each_selected_pair(reviewer_client, project, pair):
    response = reviewer_client.post(
        reverse("review:conflict-bulk"),
        {"action": "keep-newer", "ids": [pair.pk, 99999]},
        follow=True,
    )
    assert "Decided 1 pair." in response.text
    assert "Pair 99999" in response.text
    assert Memory.objects.get(pk=pair.first_id).superseded_by_id == pair.second_id
    empty = reviewer_client.post(
        reverse("review:conflict-bulk"), {"action": "dismiss"}, follow=True
    )
    assert "Select one or more pairs" in empty.text


def test_the_side_by_side_page_marks_the_words_that_disagree(reviewer_client, pair):
    page = reviewer_client.get(reverse("review:conflict", args=[pair.pk])).text
    assert "<mark>10 seconds</mark>" in page
    assert "<mark>30 seconds</mark>" in page


def test_marks_escape_the_words_and_join_overlapping_spans():
    text = "Use <b>pnpm</b> for installs\nnot npm"
    html = marked(text, [(4, 15), (9, 13), (33, 36)])
    assert html == ("Use <mark>&lt;b&gt;pnpm&lt;/b&gt;</mark> for installs<br>not <mark>npm</mark>")
