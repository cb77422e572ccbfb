"""The admin's lists at any size (DESIGN.md 6g): a fixed number of statements per page, no
exact count past a bound, search and order through indexes, pages read by id."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from django.contrib import admin
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from memories.admin import lists
from memories.models import Membership, Memory, MemoryEvent
from tests.factories import ProjectFactory

pytestmark = pytest.mark.django_db

CHANGELIST = reverse("admin:memories_memory_changelist")
EVENTS = reverse("admin:memories_memoryevent_changelist")
PER_PROJECT = 3_000


@pytest.fixture
def store(project, other_project):
    """Two projects of 3,000 memories each (``project``'s first, so that the other one's are
    the newest), a tenth of them inactive, one in a thousand about invoices, with the
    planner's statistics: the shape of a real store rather than an empty table."""
    with connection.cursor() as cursor:
        for owner in (project, other_project):
            cursor.execute(
                """
                INSERT INTO project_memories (project_id, scope, type, content, summary,
                    source, tags, tag_patterns, tag_keys, relevance_score, confidence, active,
                    review_status, pinned, tier, token_count, access_count, content_hash,
                    created_at, updated_at)
                SELECT %s, 'project', 'learning',
                    CASE WHEN i %% 1000 = 1 THEN 'Round the invoice totals ' || i
                         ELSE 'Keep the cache warm for topic ' || i %% 97 END,
                    '', 'human', ARRAY['topic-' || i %% 97], '{}', '{}', 0.5, 0.5, i %% 10 <> 0,
                    'pending', false, 'hot', 8, 0, md5(%s || '-' || i), now(), now()
                FROM generate_series(1, %s) AS i
                """,
                [owner.pk, owner.pk, PER_PROJECT],
            )
        cursor.execute("ANALYZE project_memories")
    return project


def changelist(client: Any, query: str = "", url: str = CHANGELIST) -> tuple[Any, list[str]]:
    with CaptureQueriesContext(connection) as queries:
        response = client.get(f"{url}?{query}" if query else url)
    assert response.status_code == 200, response.content.decode()[:500]
    return response, [query["sql"] for query in queries.captured_queries]


def page_ids(response: Any) -> list[int]:
    return [memory.pk for memory in response.context["cl"].result_list]


def main_statement(statements: list[str], table: str = "project_memories") -> str:
    """The statement that reads the page's rows (on a list of several pages: their ids
    first, then those rows)."""
    (statement,) = [sql for sql in statements if sql.startswith(f'SELECT "{table}"."id", ')]
    return statement


def plan_of(sql: str) -> dict[str, Any]:
    with connection.cursor() as cursor:
        cursor.execute(f"EXPLAIN (FORMAT JSON) {sql}")
        plan = cursor.fetchone()[0]
    return (json.loads(plan) if isinstance(plan, str) else plan)[0]["Plan"]


def nodes(plan: dict[str, Any]) -> list[dict[str, Any]]:
    return [plan, *(node for child in plan.get("Plans", []) for node in nodes(child))]


def reads(plan: dict[str, Any]) -> set[tuple[str, str]]:
    """(node type, index or table) of every scan in the plan."""
    return {
        (node["Node Type"], node.get("Index Name", node.get("Relation Name", "")))
        for node in nodes(plan)
        if "Scan" in node["Node Type"]
    }


# Statements of one page as a superuser: the session and the user; the projects the filter
# lists; a count with a LIMIT of the bound; past the bound, the planner's estimate of the
# count (EXPLAIN); the page.
@pytest.mark.parametrize(
    ("query", "bound", "statements"),
    [
        ("", 10_000, 5),
        ("", 1_000, 6),
        ("project__id__exact={project}", 10_000, 5),
        ("project__id__exact={project}", 1_000, 6),
        ("q=invoice", 10_000, 5),
        ("q=%23{memory}", 10_000, 5),
        ("p=3", 1_000, 6),
        ("project__id__exact={project}&q=cache&p=2", 1_000, 6),
    ],
)
def test_statements_per_memories_page(
    admin_client, store, monkeypatch, query, bound, statements, django_assert_num_queries
):
    monkeypatch.setattr(lists, "EXACT_COUNT_BOUND", bound)
    memory = Memory.objects.filter(project=store).first()
    query = query.format(project=store.pk, memory=memory.pk)
    admin_client.get(CHANGELIST)  # the content types and permissions are cached
    with django_assert_num_queries(statements):
        assert admin_client.get(f"{CHANGELIST}?{query}").status_code == 200


def test_statements_with_a_project_beyond_the_listed_ones(
    admin_client, store, other_project, monkeypatch, django_assert_num_queries
):
    monkeypatch.setattr(lists, "PROJECT_CHOICES", 1)  # ``store``, the first by name
    monkeypatch.setattr(lists, "EXACT_COUNT_BOUND", 1_000)
    admin_client.get(CHANGELIST)
    with django_assert_num_queries(7):  # the chosen project, read by its id
        admin_client.get(f"{CHANGELIST}?project__id__exact={other_project.pk}")


def test_statements_per_history_page(admin_client, store, django_assert_num_queries):
    MemoryEvent.objects.bulk_create(
        MemoryEvent(memory_id=memory_id, project=store, action="updated", actor_label="tests")
        for memory_id in Memory.objects.filter(project=store).values_list("pk", flat=True)
    )
    admin_client.get(EVENTS)
    with django_assert_num_queries(6):  # 3,000 rows: counted to the bound, then estimated
        assert admin_client.get(f"{EVENTS}?project__id__exact={store.pk}").status_code == 200


def test_a_large_list_is_never_counted_exactly(admin_client, store, monkeypatch):
    monkeypatch.setattr(lists, "EXACT_COUNT_BOUND", 1_000)
    for query in ["", f"project__id__exact={store.pk}", "q=cache", "p=20"]:
        response, statements = changelist(admin_client, query)
        counts = [sql for sql in statements if "COUNT(" in sql and "project_memories" in sql]
        assert all("LIMIT" in sql for sql in counts), counts
        assert response.context["cl"].paginator.estimated
    page = response.content.decode()
    # 6,000 rows as the planner expects them, shown as an estimate.
    assert re.search(r"about [56],\d00 memories", page), page[-3000:]


def test_a_small_list_is_counted_exactly_and_with_a_limit(admin_client, project, make_memory):
    for n in range(3):
        make_memory(project=project, content=f"Memory {n} of a small project")
    response, statements = changelist(admin_client)
    (count,) = [sql for sql in statements if "COUNT(" in sql]
    assert f"LIMIT {lists.EXACT_COUNT_BOUND + 1}" in count
    assert not response.context["cl"].paginator.estimated
    assert "3 memories" in response.content.decode()


def test_pages_walk_the_ids_newest_first(admin_client, store):
    newest = list(Memory.objects.filter(project=store).order_by("-id").values_list("pk", flat=True))
    first, _ = changelist(admin_client, f"project__id__exact={store.pk}")
    third, _ = changelist(admin_client, f"project__id__exact={store.pk}&p=3")
    assert page_ids(first) == newest[:50]
    assert page_ids(third) == newest[100:150]
    oldest_first, _ = changelist(admin_client, f"project__id__exact={store.pk}&o=1")
    assert page_ids(oldest_first) == sorted(newest)[:50]


def test_a_project_list_walks_its_index_at_any_page(admin_client, store):
    for query in [f"project__id__exact={store.pk}", f"project__id__exact={store.pk}&p=40"]:
        _, statements = changelist(admin_client, query)
        plan = plan_of(main_statement(statements))
        # The ids through the index alone; only the page's rows are read from the table.
        assert ("Index Only Scan", "memory_project_id_unique") in reads(plan), reads(plan)
        assert ("Seq Scan", "project_memories") not in reads(plan), reads(plan)
        # The ids come in the index's order: nothing sorts the project's memories.
        assert not any(
            node["Node Type"] == "Sort" and node["Plan Rows"] > 50 for node in nodes(plan)
        )


def test_every_projects_list_walks_the_primary_key(admin_client, store):
    _, statements = changelist(admin_client, "p=40")
    plan = plan_of(main_statement(statements))
    assert ("Index Only Scan", "project_memories_pkey") in reads(plan), reads(plan)
    assert not any(node["Node Type"] == "Sort" and node["Plan Rows"] > 50 for node in nodes(plan))


def test_a_search_for_a_rare_word_reads_the_text_index(admin_client, store):
    response, statements = changelist(admin_client, "q=invoices")
    plan = plan_of(main_statement(statements))
    assert ("Bitmap Index Scan", "memory_search_gin") in reads(plan), reads(plan)
    assert ("Seq Scan", "project_memories") not in reads(plan)
    # One in a thousand memories of each project is about invoices.
    assert len(page_ids(response)) == 6


def test_search_finds_words_of_active_memories_through_the_index(
    admin_client, project, make_memory
):
    found = make_memory(project=project, content="Rotate the signing keys every quarter")
    archived = make_memory(project=project, content="Rotate the signing certificates")
    Memory.objects.filter(pk=archived.pk).update(active=False)
    make_memory(project=project, content="Nothing about it")
    response, _ = changelist(admin_client, "q=signing rotated")
    assert page_ids(response) == [found.pk]
    # Filtered to the inactive ones, the search reads them (without the index).
    response, _ = changelist(admin_client, "q=signing&active__exact=0")
    assert page_ids(response) == [archived.pk]
    assert "Inactive memories are searched with the filter" in response.content.decode()


def test_search_by_id_and_by_whole_tag(admin_client, project, make_memory):
    tagged = make_memory(project=project, content="Unrelated words", tags=["src/core/**"])
    other = make_memory(project=project, content="Other words")
    for query in [f"q=%23{other.pk}", f"q={other.pk}"]:
        response, _ = changelist(admin_client, query)
        assert page_ids(response) == [other.pk]
    response, _ = changelist(admin_client, "q=src/core/**")
    assert page_ids(response) == [tagged.pk]


def test_a_page_past_the_estimate_is_served_empty(admin_client, store, monkeypatch):
    monkeypatch.setattr(lists, "EXACT_COUNT_BOUND", 1_000)
    response, _ = changelist(admin_client, f"project__id__exact={store.pk}&p=5000")
    assert page_ids(response) == []


def test_the_project_filter_lists_a_bounded_number_of_projects(admin_client, store, monkeypatch):
    monkeypatch.setattr(lists, "PROJECT_CHOICES", 2)
    beyond = ProjectFactory(name="ZZZ last by name", slug="zzz")
    response, _ = changelist(admin_client)
    page = response.content.decode()
    assert "ZZZ last by name" not in page
    assert 'name="project__id__exact"' in page  # the box for any other project
    # Chosen by slug (or id), it is listed and selected.
    response, _ = changelist(admin_client, "project__id__exact=zzz")
    assert "ZZZ last by name" in response.content.decode()
    assert page_ids(response) == []
    response, _ = changelist(admin_client, f"project__id__exact={store.slug}")
    assert len(page_ids(response)) == 50
    assert beyond.pk


def test_the_project_filter_names_only_the_persons_projects(client, store, other_project):
    staff = get_user_model().objects.create_user("staff", password="pw", is_staff=True)
    staff.user_permissions.add(*Permission.objects.filter(codename="view_memory"))
    Membership.objects.create(user=staff, project=store, role="viewer")
    client.force_login(staff)
    response, _ = changelist(client)
    page = response.content.decode()
    assert store.name in page
    assert other_project.name not in page


def test_history_is_searched_by_memory_id(admin_client, project, make_memory):
    first = make_memory(project=project, content="First memory")
    make_memory(project=project, content="Second memory")
    response, _ = changelist(admin_client, f"q=%23{first.pk}", url=EVENTS)
    assert [event.memory_id for event in response.context["cl"].result_list] == [first.pk]


def test_a_project_links_to_its_memories(admin_client, project):
    page = admin_client.get(reverse("admin:memories_project_changelist")).content.decode()
    assert f"{CHANGELIST}?project__id__exact={project.pk}" in page


def test_every_changelist_answers_filtered_to_a_project_by_id_and_slug(admin_client, project):
    for model, model_admin in admin.site._registry.items():
        opts = model._meta
        url = reverse(f"admin:{opts.app_label}_{opts.model_name}_changelist")
        assert admin_client.get(url).status_code == 200, url
        if lists.ProjectFilter in model_admin.list_filter:
            for value in [project.pk, project.slug, "none"]:
                response = admin_client.get(f"{url}?project__id__exact={value}")
                assert response.status_code == 200, (url, value)
                assert "?e=1" not in response.get("Location", ""), (url, value)


ODD_TERMS = [
    "#",
    "#abc",
    "#²",
    "²",
    "١٢٣",
    "#" + "9" * 30,
    "9" * 5000,
    "a & | !",
    "'",
    "\\",
    "a\x00b",
]


@pytest.mark.parametrize("term", ODD_TERMS)
def test_any_search_term_is_searched_or_finds_nothing(admin_client, project, make_memory, term):
    make_memory(project=project)
    for query in ({"q": term}, {"q": term, "active__exact": "0"}):
        assert admin_client.get(CHANGELIST, query).status_code == 200, (term, query)
    assert admin_client.get(EVENTS, {"q": term}).status_code == 200, term


@pytest.mark.parametrize("value", ["²", "9" * 30, "9" * 5000, "nope", " 1 ", "\x00"])
def test_any_project_filter_value_is_a_project_or_none(admin_client, project, make_memory, value):
    make_memory(project=project)
    for url in (CHANGELIST, EVENTS):
        assert admin_client.get(url, {"project__id__exact": value}).status_code in (200, 302)


def test_staff_with_no_role_see_an_empty_list(client, project, make_memory):
    make_memory(project=project)
    staff = get_user_model().objects.create_user("staff", is_staff=True)
    staff.user_permissions.add(
        *Permission.objects.filter(codename__in=["view_memory", "view_memoryevent"])
    )
    client.force_login(staff)
    for url in (CHANGELIST, EVENTS):
        response = client.get(url)
        assert response.status_code == 200, url
        assert page_ids(response) == []
