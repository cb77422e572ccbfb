"""The review pages through the Django test client: each page, each action, who may act."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.db import connection
from django.urls import reverse
from django.utils import timezone

from memories import services
from memories.counting import count_up_to
from memories.models import Memory, ReviewStatus
from policies.consolidation import consolidate_memories
from policies.expiry import expire_memories
from policies.runner import record_run
from policies.staleness import memories_mark_changed
from review.forms import SORTS
from tests.factories import distinct_sentence
from tests.review.conftest import HTMX

pytestmark = pytest.mark.django_db


def _pending(make_memory, project, count, **kwargs):
    return [make_memory(project=project, **kwargs) for _ in range(count)]


# --- sign-in and permissions ------------------------------------------------------------------


def test_pages_ask_to_sign_in(client, project, make_memory):
    memory = make_memory(project=project)
    for url in [
        reverse("review:dashboard"),
        reverse("review:queue"),
        reverse("review:memories", args=[project.slug]),
        reverse("review:memory", args=[memory.pk]),
        reverse("review:preview", args=[project.slug]),
        reverse("review:runs", args=[project.slug]),
    ]:
        response = client.get(url)
        assert response.status_code == 302
        assert response.url.startswith(reverse("login"))


def test_sign_in_page_signs_in_and_returns(client, reviewer):
    page = client.get(reverse("login"))
    assert page.status_code == 200
    response = client.post(
        reverse("login"),
        {"username": reviewer.username, "password": "pass-for-tests", "next": "/review/queue/"},
    )
    assert response.status_code == 302
    assert response.url == "/review/queue/"


def test_root_leads_to_the_dashboard(client):
    assert client.get("/").url == reverse("review:dashboard")


def test_a_reader_reads_but_gets_403_for_every_action(reader_client, project, make_memory):
    memory = make_memory(project=project)
    queue = reader_client.get(reverse("review:project-queue", args=[project.slug]))
    assert queue.status_code == 200
    assert memory.content in queue.text
    assert "Approve" not in queue.text  # no buttons for readers
    for name in ["approve", "reject", "pin"]:
        response = reader_client.post(reverse(f"review:{name}", args=[memory.pk]))
        assert response.status_code == 403
        assert "reviewers may change its memories" in response.text.lower()
    edit = reader_client.post(
        reverse("review:memory-edit", args=[memory.pk]), {"content": "x", "type": "pattern"}
    )
    assert edit.status_code == 403
    bulk = reader_client.post(
        reverse("review:memory-bulk"), {"action": "approve", "ids": [memory.pk]}
    )
    assert bulk.status_code == 403
    memory.refresh_from_db()
    assert memory.review_status == ReviewStatus.PENDING
    assert not memory.pinned
    assert memory.events.count() == 1  # created only


def test_actions_are_post_only(reviewer_client, project, make_memory):
    memory = make_memory(project=project)
    assert reviewer_client.get(reverse("review:approve", args=[memory.pk])).status_code == 405


def test_unknown_project_and_memory_are_404(reviewer_client):
    assert reviewer_client.get(reverse("review:memories", args=["nope"])).status_code == 404
    assert reviewer_client.get(reverse("review:memory", args=[999999])).status_code == 404
    assert reviewer_client.post(reverse("review:approve", args=[999999])).status_code == 404


# --- dashboard --------------------------------------------------------------------------------


def test_dashboard_counts_each_state(
    reviewer_client, project, other_project, make_memory, reviewer_actor
):
    now = timezone.now()
    waiting = make_memory(project=project)
    approved = make_memory(project=project)
    services.memory_approve(memory=approved, actor=reviewer_actor)
    expiring = make_memory(project=project, expires_at=now + timedelta(days=3))
    services.memory_approve(memory=expiring, actor=reviewer_actor)
    low = make_memory(project=project, source="learning")  # confidence 0.3 is not below
    services.memory_approve(memory=low, actor=reviewer_actor)
    Memory.objects.filter(pk=low.pk).update(confidence=0.25)
    rejected = make_memory(project=project)
    services.memory_reject(memory=rejected, actor=reviewer_actor)
    stale = make_memory(project=project, tags=["src/core/**"])
    services.memory_approve(memory=stale, actor=reviewer_actor)
    memories_mark_changed(
        project=project, paths=["src/core/a.py"], ref="abc123", actor=reviewer_actor
    )
    make_memory(project=other_project)
    services.memories_set_active(memory_ids=[waiting.pk], active=True, actor=reviewer_actor)

    response = reviewer_client.get(reverse("review:dashboard"))

    assert response.status_code == 200
    rows = {row.project.pk: row for row in response.context["overview"]}
    mine = rows[project.pk]
    assert (mine.active, mine.needs_review, mine.stale) == (5, 2, 1)
    assert (mine.expiring, mine.low_confidence, mine.archived) == (1, 1, 0)
    assert rows[other_project.pk].needs_review == 1


def test_dashboard_shows_the_last_run_of_each_job(reviewer_client, project):
    record_run(expire_memories)
    response = reviewer_client.get(reverse("review:dashboard"))
    assert "expire_memories" in response.text


def test_dashboard_query_count_does_not_grow_with_projects(
    reviewer_client, django_assert_num_queries, make_memory
):
    from tests.factories import ProjectFactory

    for project in ProjectFactory.create_batch(5):
        make_memory(project=project)
    # session, user, the user's and their groups' permissions (their role over every
    # project), the projects with their counts, global queue count, jobs
    with django_assert_num_queries(7):
        reviewer_client.get(reverse("review:dashboard"))


def test_dashboard_counts_each_kind_up_to_the_bound(
    reviewer_client, project, make_memory, reviewer_actor, settings
):
    memories = [make_memory(project=project) for _ in range(4)]
    soon = timezone.now() + timedelta(days=2)
    Memory.objects.filter(pk__in=[m.pk for m in memories[:3]]).update(
        expires_at=soon, confidence=0.1
    )
    services.memory_flag(memory=memories[0], actor=reviewer_actor, reason="x")
    settings.LIST_COUNT_BOUND = 3
    row = next(
        r
        for r in reviewer_client.get(reverse("review:dashboard")).context["overview"]
        if r.project == project
    )
    assert (str(row.active), str(row.needs_review)) == ("3+", "3+")
    assert (row.stale, row.expiring, row.low_confidence, row.archived) == (1, 3, 3, 0)


# --- queue ------------------------------------------------------------------------------------


def test_queue_holds_waiting_and_stale_memories_only(
    reviewer_client, project, make_memory, reviewer_actor
):
    waiting = make_memory(project=project, content="waiting for a reviewer")
    done = make_memory(project=project, content="already approved")
    services.memory_approve(memory=done, actor=reviewer_actor)
    stale = make_memory(project=project, content="core rule", tags=["src/core/**"])
    services.memory_approve(memory=stale, actor=reviewer_actor)
    memories_mark_changed(
        project=project, paths=["src/core/x.py"], ref="f00dbeef", actor=reviewer_actor
    )

    response = reviewer_client.get(reverse("review:project-queue", args=[project.slug]))

    shown = [memory.pk for memory in response.context["page"]]
    assert sorted(shown) == sorted([waiting.pk, stale.pk])
    assert "f00dbeef" in response.text


def test_queue_orders_newest_or_least_confident_first(reviewer_client, project, make_memory):
    human = make_memory(project=project, source="human")  # 1.0
    learning = make_memory(project=project, source="learning")  # 0.3
    run = make_memory(project=project, source="run")  # 0.5
    url = reverse("review:project-queue", args=[project.slug])
    newest = [m.pk for m in reviewer_client.get(url).context["page"]]
    least = [m.pk for m in reviewer_client.get(url + "?order=least-confident").context["page"]]
    assert newest == [run.pk, learning.pk, human.pk]
    assert least == [learning.pk, run.pk, human.pk]


def test_queue_across_projects_includes_global_memories(
    reviewer_client, project, other_project, make_memory, system_actor
):
    a = make_memory(project=project)
    b = make_memory(project=other_project)
    shared = services.memory_create(
        project=None, type="pattern", content="a shared rule", source="run", actor=system_actor
    )
    shown = {m.pk for m in reviewer_client.get(reverse("review:queue")).context["page"]}
    assert {a.pk, b.pk, shared.pk} <= shown


def test_queue_page_of_50_rows_runs_a_fixed_number_of_queries(
    reviewer_client, project, make_memory, make_run, django_assert_num_queries
):
    run = make_run(project=project)
    _pending(make_memory, project, 60, source_run=run, tags=["a", "b"])
    url = reverse("review:project-queue", args=[project.slug])
    # session, user, project, count, rows (with run and project), their open pairs,
    # permissions (2)
    with django_assert_num_queries(8):
        response = reviewer_client.get(url)
    assert len(response.context["page"].object_list) == 50
    assert response.text.count('data-memory="') == 50


def test_queue_htmx_request_for_results_renders_the_part_only(
    reviewer_client, project, make_memory
):
    make_memory(project=project)
    response = reviewer_client.get(
        reverse("review:project-queue", args=[project.slug]), HTTP_HX_TARGET="results", **HTMX
    )
    assert response.text.lstrip().startswith('<div id="results">')
    assert "<html" not in response.text


# --- single actions ---------------------------------------------------------------------------


def test_approve_with_htmx_removes_the_row_from_the_queue(
    reviewer_client, reviewer, project, make_memory
):
    memory = make_memory(project=project, content="approve me")
    response = reviewer_client.post(
        reverse("review:approve", args=[memory.pk]), {"view": "queue"}, **HTMX
    )
    assert response.status_code == 200
    # The queue's page comes back refilled: the row is gone, the count is the new one.
    assert '<div id="results" hx-swap-oob="true">' in response.text
    assert f'id="memory-{memory.pk}"' not in response.text
    assert "<strong>0</strong> waiting" in response.text
    assert 'id="messages"' in response.text
    assert "Approved: “approve me”" in response.text
    memory.refresh_from_db()
    assert memory.review_status == ReviewStatus.APPROVED
    assert memory.confidence == 1.0
    assert memory.approved_by == reviewer
    assert memory.events.filter(action="approved", actor_user=reviewer).count() == 1


def test_approve_in_the_list_swaps_the_updated_row(reviewer_client, project, make_memory):
    memory = make_memory(project=project)
    response = reviewer_client.post(
        reverse("review:approve", args=[memory.pk]), {"view": "list"}, **HTMX
    )
    assert f'id="memory-{memory.pk}"' in response.text
    assert 'hx-swap-oob="true"' in response.text
    assert 'class="status approved"' in response.text


def test_approve_without_javascript_redirects_back_with_a_message(
    reviewer_client, project, make_memory
):
    memory = make_memory(project=project, content="no script here")
    back = reverse("review:project-queue", args=[project.slug]) + "?order=least-confident"
    response = reviewer_client.post(
        reverse("review:approve", args=[memory.pk]), {"view": "queue", "next": back}
    )
    assert response.status_code == 302
    assert response.url == back
    page = reviewer_client.get(back)
    assert "Approved: “no script here”" in page.text
    assert memory.pk not in [m.pk for m in page.context["page"]]


def test_an_outside_next_is_not_followed(reviewer_client, project, make_memory):
    memory = make_memory(project=project)
    response = reviewer_client.post(
        reverse("review:approve", args=[memory.pk]), {"next": "https://evil.example/"}
    )
    assert response.url == reverse("review:queue")


def test_reject_removes_the_row_and_deactivates(reviewer_client, project, make_memory):
    memory = make_memory(project=project)
    response = reviewer_client.post(
        reverse("review:reject", args=[memory.pk]), {"view": "queue"}, **HTMX
    )
    assert '<div id="results" hx-swap-oob="true">' in response.text
    assert f'id="memory-{memory.pk}"' not in response.text
    memory.refresh_from_db()
    assert (memory.review_status, memory.active) == (ReviewStatus.REJECTED, False)


def test_pin_keeps_the_row_in_the_queue_and_shows_the_pin(reviewer_client, project, make_memory):
    memory = make_memory(project=project)
    response = reviewer_client.post(
        reverse("review:pin", args=[memory.pk]), {"view": "queue"}, **HTMX
    )
    assert 'hx-swap-oob="true"' in response.text
    assert "badge pinned" in response.text
    assert "Unpin" in response.text
    memory.refresh_from_db()
    assert memory.pinned
    reviewer_client.post(reverse("review:unpin", args=[memory.pk]), {"view": "queue"}, **HTMX)
    memory.refresh_from_db()
    assert not memory.pinned


def test_an_action_that_changes_nothing_says_so(
    reviewer_client, project, make_memory, reviewer_actor
):
    memory = make_memory(project=project)
    services.memories_set_pinned(memory_ids=[memory.pk], pinned=True, actor=reviewer_actor)
    response = reviewer_client.post(reverse("review:pin", args=[memory.pk]), **HTMX)
    assert "Nothing to change" in response.text
    assert memory.events.filter(action="pinned").count() == 1


# --- inline edit ------------------------------------------------------------------------------


def test_edit_opens_a_form_row_and_saves(reviewer_client, reviewer, project, make_memory):
    memory = make_memory(project=project, content="old words", tags=["a"])
    form = reviewer_client.get(
        reverse("review:memory-edit", args=[memory.pk]) + "?view=queue", **HTMX
    )
    assert '<tr id="memory-' in form.text
    assert "old words</textarea>" in form.text
    response = reviewer_client.post(
        reverse("review:memory-edit", args=[memory.pk]),
        {"content": "new words", "tags": "a, src/api/**", "type": "warning", "view": "queue"},
        **HTMX,
    )
    assert response.status_code == 200
    assert "new words" in response.text
    assert 'hx-swap-oob="true"' in response.text
    memory.refresh_from_db()
    assert (memory.content, memory.tags, memory.type) == (
        "new words",
        ["a", "src/api/**"],
        "warning",
    )
    event = memory.events.get(action="updated")
    assert event.actor_user == reviewer
    assert event.changes["content"] == ["old words", "new words"]


def test_edit_with_bad_input_shows_the_problem_and_keeps_the_memory(
    reviewer_client, project, make_memory
):
    memory = make_memory(project=project, content="keep me")
    response = reviewer_client.post(
        reverse("review:memory-edit", args=[memory.pk]),
        {"content": "   ", "tags": "", "type": "pattern", "view": "list"},
        **HTMX,
    )
    assert response.status_code == 200
    assert "This field is required." in response.text
    assert 'class="editing" hx-swap-oob="true"' in response.text
    too_many = ", ".join(f"t{i}" for i in range(500))
    response = reviewer_client.post(
        reverse("review:memory-edit", args=[memory.pk]),
        {"content": "fine", "tags": too_many, "type": "pattern"},
        **HTMX,
    )
    assert "tags" in response.text.lower()
    memory.refresh_from_db()
    assert memory.content == "keep me"
    assert not memory.events.filter(action="updated").exists()


def test_edit_without_javascript_is_a_page_and_redirects_back(
    reviewer_client, project, make_memory
):
    memory = make_memory(project=project, content="plain form")
    page = reviewer_client.get(reverse("review:memory-edit", args=[memory.pk]))
    assert "<html" in page.text
    back = reverse("review:memories", args=[project.slug])
    response = reviewer_client.post(
        reverse("review:memory-edit", args=[memory.pk]),
        {"content": "plain form, edited", "tags": "", "type": "pattern", "next": back},
    )
    assert response.url == back


def test_row_puts_back_the_row(reviewer_client, project, make_memory):
    memory = make_memory(project=project)
    response = reviewer_client.get(reverse("review:memory-row", args=[memory.pk]) + "?view=queue")
    assert response.text.strip().startswith(f'<tr id="memory-{memory.pk}"')


# --- bulk -------------------------------------------------------------------------------------


def test_bulk_approve_and_reject(reviewer_client, project, make_memory):
    memories = _pending(make_memory, project, 4)
    ids = [m.pk for m in memories[:3]]
    response = reviewer_client.post(
        reverse("review:memory-bulk"), {"action": "approve", "ids": ids, "view": "queue"}, **HTMX
    )
    assert "Approved 3 memories." in response.text
    for pk in ids:
        assert f'id="memory-{pk}"' not in response.text
    assert f'id="memory-{memories[3].pk}"' in response.text  # the page refilled
    assert Memory.objects.filter(pk__in=ids, review_status="approved").count() == 3
    reviewer_client.post(
        reverse("review:memory-bulk"), {"action": "reject", "ids": [memories[3].pk]}, **HTMX
    )
    memories[3].refresh_from_db()
    assert memories[3].review_status == ReviewStatus.REJECTED


def test_bulk_without_a_selection_or_action_changes_nothing(reviewer_client, project, make_memory):
    memory = make_memory(project=project)
    for data in [{"action": "approve"}, {"action": "delete", "ids": [memory.pk]}]:
        response = reviewer_client.post(reverse("review:memory-bulk"), data, **HTMX)
        assert "Select one or more memories" in response.text
    memory.refresh_from_db()
    assert memory.review_status == ReviewStatus.PENDING


# --- project memories -------------------------------------------------------------------------


def test_list_filters_by_each_field(reviewer_client, project, make_memory, reviewer_actor):
    warning = make_memory(
        project=project, type="warning", content="Never log request bodies", tags=["logging"]
    )
    pattern = make_memory(
        project=project, type="pattern", source="human", content="Services own writes"
    )
    inactive = make_memory(project=project, content="Gone now")
    services.memories_set_active(memory_ids=[inactive.pk], active=False, actor=reviewer_actor)
    services.memory_approve(memory=pattern, actor=reviewer_actor)
    url = reverse("review:memories", args=[project.slug])

    def shown(query):
        return {m.pk for m in reviewer_client.get(url + query).context["page"]}

    assert shown("") == {warning.pk, pattern.pk, inactive.pk}
    assert shown("?type=warning") == {warning.pk}
    assert shown("?source=human") == {pattern.pk}
    assert shown("?review=approved") == {pattern.pk}
    assert shown("?active=no") == {inactive.pk}
    assert shown("?active=yes&tier=hot") == {warning.pk, pattern.pk}
    assert shown("?tag=logging") == {warning.pk}
    assert shown("?q=request+bodies") == {warning.pk}


def test_list_sorts_and_pagination_keeps_the_filters(reviewer_client, project, make_memory):
    _pending(make_memory, project, 55, type="warning")
    url = reverse("review:memories", args=[project.slug])
    response = reviewer_client.get(url + "?type=warning&sort=oldest")
    page = response.context["page"]
    assert str(page.count) == "55"
    assert [m.pk for m in page] == sorted(m.pk for m in page)
    assert "?type=warning&amp;sort=oldest&amp;after=" in response.text
    second = reviewer_client.get(url + f"?type=warning&sort=oldest&after={page.next_after}")
    assert len(second.context["page"].object_list) == 5
    assert second.context["page"].object_list[0].pk > page.object_list[-1].pk


@pytest.mark.parametrize("sort", list(SORTS))
def test_every_sort_pages_through_each_memory_once(reviewer_client, project, make_memory, sort):
    memories = _pending(make_memory, project, 7)
    Memory.objects.filter(pk__in=[m.pk for m in memories[::2]]).update(
        confidence=0.4, expires_at=timezone.now() + timedelta(days=3)
    )
    url = reverse("review:memories", args=[project.slug])
    seen, after = [], ""
    while True:
        page = reviewer_client.get(url, {"sort": sort, "after": after}).context["page"]
        seen += [m.pk for m in page]
        if not page.next_after:
            break
        after = page.next_after
    assert sorted(seen) == sorted(m.pk for m in memories)


def test_a_count_reads_no_further_than_the_bound_and_estimates_above(
    reviewer_client, project, make_memory, settings
):
    _pending(make_memory, project, 13)
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE project_memories")  # the planner's estimate: about 13
    settings.LIST_COUNT_BOUND = 5
    response = reviewer_client.get(reverse("review:memories", args=[project.slug]))
    assert str(response.context["page"].count) == "about 13"
    assert "about 13 memories" in response.text
    queue = reviewer_client.get(reverse("review:project-queue", args=[project.slug]))
    assert "<strong>about 13</strong> waiting" in queue.text
    settings.LIST_COUNT_BOUND = 12  # counted past the bound: the estimate
    assert str(reviewer_client.get(queue.request["PATH_INFO"]).context["page"].count) == (
        "about 13"
    )
    settings.LIST_COUNT_BOUND = 13
    assert str(reviewer_client.get(queue.request["PATH_INFO"]).context["page"].count) == "13"


def test_an_estimate_too_low_still_counts_up_to_the_bound(project, make_memory):
    _pending(make_memory, project, 2)
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE project_memories")
    _pending(make_memory, project, 30)  # the statistics still say 2
    tally = count_up_to(Memory.objects.filter(project=project), 10, estimate=True)
    assert str(tally) == "10+"


# --- memory detail ----------------------------------------------------------------------------


def test_detail_shows_fields_history_runs_and_confidence_over_time(
    reviewer_client, project, make_memory, make_run, system_actor
):
    memory = make_memory(project=project, content="Detail me", tags=["src/core/**"])
    run = make_run(project=project, external_id="run-42", task_title="Fix the ledger")
    services.run_give_memories(run=run, ranked=[(memory.pk, 0.7)])
    services.run_record_outcome(run=run, outcome="succeeded", actor=system_actor)

    response = reviewer_client.get(reverse("review:memory", args=[memory.pk]))

    assert response.status_code == 200
    text = response.text
    assert "Detail me" in text
    assert "run-42" in text
    assert "Fix the ledger" in text
    assert "succeeded" in text
    assert [e.action for e in response.context["history"]] == ["outcome", "created"]
    values = [value for _, value in response.context["points"]]
    assert values[:2] == [0.5, 0.6]
    assert values[-1] == pytest.approx(0.6)
    assert "<polyline points=" in text


def test_detail_of_a_merged_memory_links_its_survivor(
    reviewer_client, project, make_memory, reviewer_actor
):
    survivor = make_memory(project=project, content="Use UTC everywhere in the code base.")
    twin = make_memory(project=project, content="Use UTC everywhere in the code base!")
    services.memory_approve(memory=survivor, actor=reviewer_actor)
    consolidate_memories()
    twin.refresh_from_db()
    assert twin.merged_into_id == survivor.pk
    response = reviewer_client.get(reverse("review:memory", args=[twin.pk]))
    assert reverse("review:memory", args=[survivor.pk]) in response.text


# --- context preview --------------------------------------------------------------------------


def test_preview_shows_what_the_agent_would_get_and_records_nothing(
    reviewer_client, project, make_memory, reviewer_actor
):
    rule = make_memory(
        project=project,
        type="warning",
        content="Full test suite required in src/core.",
        tags=["src/core/**"],
    )
    services.memory_approve(memory=rule, actor=reviewer_actor)
    other = make_memory(project=project, content="Unrelated words about deploys.", tags=["deploy"])
    services.memory_approve(memory=other, actor=reviewer_actor)
    url = reverse("review:preview", args=[project.slug])

    response = reviewer_client.get(
        url, {"write_scope": "src/core/ledger.py", "intent": "fix ledger", "token_budget": 40}
    )

    assert response.status_code == 200
    result = response.context["result"]
    assert result.text.startswith("## Memories\n- [warning] Full test suite required")
    assert result.metadata.total_tokens <= 40
    assert rule.pk in [item.id for item in result.items]
    assert "Full test suite required" in response.text
    assert str(result.metadata.total_tokens) in response.text
    # Each chosen memory's score parts, named in words.
    assert "scope 1.00" in response.text or "scope 0." in response.text
    assert "text relevance" in response.text
    assert "semantic 0." in response.text
    rule.refresh_from_db()
    assert rule.access_count == 0
    assert not rule.given_to.exists()


@pytest.fixture
def ledger(project, make_memory, reviewer_actor):
    """Approved memories about the ledger, each saying something else."""

    def make(count: int) -> None:
        for number in range(count):
            memory = make_memory(
                project=project, content=f"{distinct_sentence(number)} The ledger stays balanced."
            )
            services.memory_approve(memory=memory, actor=reviewer_actor)

    return make


def test_preview_names_what_was_dropped_and_why(reviewer_client, project, ledger):
    ledger(5)
    response = reviewer_client.get(
        reverse("review:preview", args=[project.slug]), {"intent": "ledger", "token_budget": 20}
    )
    dropped = response.context["dropped"]
    assert dropped
    reasons = {row["reason"] for row in dropped}
    assert "budget" in reasons
    assert reasons <= {"budget", "limit", "expired", "below_confidence"}
    assert dropped[0]["memory"] is not None
    assert dropped[0]["reason"] in response.text


def test_preview_names_the_memory_a_near_repeat_repeats(reviewer_client, project, make_memory):
    rule = "API errors use the shape {error: {code, message, fields}}."
    first = make_memory(project=project, content=rule, relevance_score=0.9)
    make_memory(project=project, content=rule + " (seen again in run-002)")
    response = reviewer_client.get(
        reverse("review:preview", args=[project.slug]),
        {"token_budget": 200, "lod": "atomic"},
    )
    (row,) = response.context["dropped"]
    assert (row["reason"], row["repeats"]) == ("similar", first.pk)
    assert f'href="{reverse("review:memory", args=[first.pk])}">#{first.pk}</a>' in response.text


def test_preview_with_a_bad_budget_says_so(reviewer_client, project):
    response = reviewer_client.get(
        reverse("review:preview", args=[project.slug]), {"token_budget": "0"}
    )
    assert response.status_code == 200
    assert response.context["result"] is None
    assert "Ensure this value is greater than or equal to 1." in response.text


def test_preview_first_visit_shows_the_form_only(reviewer_client, project):
    response = reviewer_client.get(reverse("review:preview", args=[project.slug]))
    assert response.context["result"] is None
    assert 'name="token_budget"' in response.text


# --- runs -------------------------------------------------------------------------------------


def test_runs_show_outcomes_and_given_memories_in_fixed_queries(
    reviewer_client, project, make_memory, make_run, system_actor, django_assert_num_queries
):
    for number in range(5):
        run = make_run(project=project, external_id=f"run-{number}")
        memories = [make_memory(project=project, content=f"Given {number}-{i}") for i in range(3)]
        services.run_give_memories(run=run, ranked=[(m.pk, 0.5) for m in memories])
        if number % 2:
            services.run_record_outcome(run=run, outcome="failed", actor=system_actor)
    # session, user, project, the user's and their groups' permissions (their role), count,
    # runs, given memories
    with django_assert_num_queries(8):
        response = reviewer_client.get(reverse("review:runs", args=[project.slug]))
    assert "Given 4-2" in response.text
    assert response.text.count('class="status failed"') == 2


def test_preview_shows_and_changes_the_limit_and_explains_itself(reviewer_client, project, ledger):
    ledger(6)
    url = reverse("review:preview", args=[project.slug])
    policy_limit = project.policy.selection_limit
    default = reviewer_client.get(url, {"intent": "ledger", "token_budget": 2000})
    assert f"At most <strong>{policy_limit}</strong>" in default.text
    assert "the project&#x27;s policy" in default.text
    limited = reviewer_client.get(url, {"intent": "ledger", "token_budget": 2000, "limit": 2})
    assert len(limited.context["chosen"]) == 2
    assert "At most <strong>2</strong> memories are given (the limit set above" in limited.text
    dropped = limited.context["dropped"]
    assert {row["reason"] for row in dropped} == {"limit"}
    assert all(row["score"] is not None for row in dropped)  # their score
    assert f"<td>{dropped[0]['memory'].token_count}</td>" in limited.text  # their cost
    for code in ("budget", "limit", "similar", "conflict", "below_confidence", "expired"):
        assert f"<dt><code>{code}</code></dt>" in limited.text  # each reason explained
    assert "tags match the write scope come first" in limited.text


def test_detail_chart_has_axes_points_and_values_and_history_reads_well(
    reviewer_client, project, make_memory, make_run, system_actor, reviewer_actor
):
    memory = make_memory(project=project, content="Chart me", tags=["src/core/**", "db"])
    run = make_run(project=project, external_id="run-7")
    services.run_give_memories(run=run, ranked=[(memory.pk, 0.7)])
    services.run_record_outcome(run=run, outcome="succeeded", actor=system_actor)
    services.memory_approve(memory=memory, actor=reviewer_actor)
    text = reviewer_client.get(reverse("review:memory", args=[memory.pk])).text
    assert text.count('class="point"') == len(
        reviewer_client.get(reverse("review:memory", args=[memory.pk])).context["points"]
    )
    assert ">0.60</text>" in text  # each point's value
    assert '<text x="-8"' in text  # the value axis
    assert ">1.0</text>" in text
    assert 'text-anchor="start">' in text  # the time axis' first date
    # History values as a person reads them.
    assert "['src/core/**', 'db']" not in text
    assert "src/core/**, db" in text
    changes = _changes(text)
    assert re.search(r"\d{4}-\d{2}-\d{2} \d{2}:\d{2}", changes)  # approved at: a date
    assert not re.search(r"\d{4}-\d{2}-\d{2}T\d", changes)  # never a raw ISO string


def _changes(html: str) -> str:
    return " ".join(re.findall(r'<td class="(?:before|after)">([^<]*)</td>', html))


def test_an_action_on_the_detail_page_refreshes_all_of_it(reviewer_client, project, make_memory):
    memory = make_memory(project=project)
    response = reviewer_client.post(
        reverse("review:approve", args=[memory.pk]), {"view": "detail"}, **HTMX
    )
    assert response["HX-Refresh"] == "true"
    page = reviewer_client.get(reverse("review:memory", args=[memory.pk])).text
    assert "approved by" in page
    assert "<strong>approved</strong>" in page


def test_the_queue_of_someone_with_no_role_is_empty(client, project, make_memory):
    from tests.factories import UserFactory

    make_memory(project=project)
    client.force_login(UserFactory())
    response = client.get(reverse("review:queue"))
    assert response.status_code == 200
    assert "<strong>0</strong> waiting" in response.text


def test_an_estimate_is_shown_only_for_a_set_counted_past_the_bound(
    reviewer_client, project, other_project, make_memory, settings
):
    """The planner's statistics are the table's: a filter that matches nothing in this
    project, and much in another, is counted, never guessed."""
    _pending(make_memory, project, 3, type="pattern")
    _pending(make_memory, other_project, 30, type="warning")
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE project_memories")
    settings.LIST_COUNT_BOUND = 2
    url = reverse("review:memories", args=[project.slug])
    assert str(reviewer_client.get(url, {"type": "warning"}).context["page"].count) == "0"
