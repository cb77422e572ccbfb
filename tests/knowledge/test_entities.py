"""Entities read from memories at write time, and the graph read from their mentions."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError
from django.db import connection
from django.test.utils import CaptureQueriesContext

from knowledge import entities, graph
from knowledge.models import Entity, EntityLink, EntityMention, EntityTerm, LinkType
from knowledge.names import glob_prefix, read_memory
from memories import services
from memories.actors import Actor

pytestmark = pytest.mark.django_db

RETRY = [
    "RetryQueue in src/billing/queue.py retries Stripe webhooks",
    "src/billing/tasks.py enqueues into RetryQueue",
    "RetryQueue drops Stripe events after 5 attempts (src/billing/retry.py)",
]


def found(content: str, summary: str = "", tags=(), terms=()) -> dict[str, str]:
    return dict(read_memory(content, summary, tags, terms).found.values())


# --- what is a name ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("RetryQueue retries webhooks", {"RetryQueue": "code"}),
        ("getUser and HTTPServer", {"getUser": "code", "HTTPServer": "code"}),
        ("retry_queue holds MAX_RETRIES items", {"retry_queue": "code", "MAX_RETRIES": "code"}),
        ("call flush() at the end", {"flush": "code"}),
        ("see `celery` docs", {"celery": "code"}),
        ("billing.tasks runs nightly", {"billing.tasks": "module"}),
        ("edit src/billing/queue.py first", {"src/billing/queue.py": "path"}),
        ("everything under src/billing/ is old", {"src/billing": "path"}),
        ("settings.toml holds it", {"settings.toml": "path"}),
        (
            "pip install requests==2.31 -U httpx then restart",
            {"requests": "package", "httpx": "package"},
        ),
        ("npm install left-pad", {"left-pad": "package"}),
        ("import numpy\nfrom django.db import models", {"numpy": "package", "django.db": "module"}),
        ("the attrs package is pinned", {"attrs": "package"}),
    ],
)
def test_names_are_read_from_words(content, expected):
    assert found(content) == expected


@pytest.mark.parametrize(
    "content",
    [
        "The deploy runs nightly and retries failed jobs.",
        "Always run the full test suite, e.g. before a release, i.e. every Tuesday.",
        "Read https://example.com/docs/page and mail ops@example.com.",
        "Version 1.5.2 fixed it; 3.5 seconds is the timeout. We import data nightly.",
        "The package manager is slow; a new library would help.",
    ],
)
def test_plain_english_words_are_not_entities(content):
    assert found(content) == {}


def test_tags_and_summary_count_and_globs_give_their_literal_prefix():
    names = found(
        "Deploys are slow.",
        summary="OrderBook is slow",
        tags=["src/core/**", "**/*.py", "deploy", "retry_queue", "src/api/views.py"],
    )
    assert names == {
        "OrderBook": "code",
        "src/core": "path",
        "retry_queue": "code",
        "src/api/views.py": "path",
    }
    assert glob_prefix("src/*.py") == "src"
    assert glob_prefix("**/x.py") == ""


def test_a_projects_words_are_entities_whole_word_in_any_case_as_spelled():
    names = found("stripe charges fail; Stripes and unstripe are other words", terms=["Stripe"])
    assert names == {"Stripe": "term"}


def test_x_imports_y_is_read_between_names():
    names = read_memory("billing.tasks imports RetryQueue. Nothing else.", "", [])
    assert names.imports == {"billing.tasks": {"retryqueue"}}


# --- at write time -----------------------------------------------------------------------------


def retry_project(make_memory, project):
    EntityTerm.objects.create(project=project, name="Stripe")
    return [make_memory(project=project, content=content) for content in RETRY]


def entity(project, name) -> Entity:
    return Entity.objects.get(project=project, key=name.lower())


def test_a_write_reads_its_entities_in_its_transaction(make_memory, project):
    memories = retry_project(make_memory, project)
    retry = entity(project, "RetryQueue")
    assert retry.kind == "code"
    assert entity(project, "Stripe").kind == "term"
    assert set(EntityMention.objects.filter(entity=retry).values_list("memory_id", flat=True)) == {
        m.pk for m in memories
    }
    assert Entity.objects.filter(project=project).count() == 5  # and the three files
    # Each mention is its memory's project's (docs/scaling.md: it lives on that shard).
    mentions = EntityMention.objects.filter(memory_id__in=[m.pk for m in memories])
    assert set(mentions.values_list("project_id", flat=True)) == {project.pk}


def test_new_words_replace_the_mentions(make_memory, project):
    memory = make_memory(project=project, content="RetryQueue lives in src/billing/queue.py")
    services.memory_update(
        memory=memory, actor=Actor.system("tests"), content="OrderBook lives in src/orders.py"
    )
    said = set(
        EntityMention.objects.filter(memory_id=memory.pk).values_list("entity__name", flat=True)
    )
    assert said == {"OrderBook", "src/orders.py"}


def test_an_edit_of_the_tags_or_summary_alone_reads_the_names_again(make_memory, project):
    memory = make_memory(project=project, content="Retries are capped.", tags=["billing"])
    actor = Actor.system("tests")

    def said() -> set[str]:
        mentions = EntityMention.objects.filter(memory_id=memory.pk)
        return set(mentions.values_list("entity__name", flat=True))

    assert said() == set()
    services.memory_update(memory=memory, actor=actor, tags=["billing", "src/billing/**"])
    assert said() == {"src/billing"}
    memory.refresh_from_db()
    services.memory_update(memory=memory, actor=actor, summary="RetryQueue caps retries")
    assert said() == {"src/billing", "RetryQueue"}
    memory.refresh_from_db()
    services.memory_update(memory=memory, actor=actor, tags=["billing"], summary="")
    assert said() == set()


def test_global_memories_entities_have_no_project(project):
    memory = services.memory_create(
        project=None,
        type="pattern",
        content="Use RetryQueue everywhere.",
        source="human",
        actor=Actor.system("tests"),
    )
    mention = EntityMention.objects.get(memory_id=memory.pk)
    assert mention.entity.project_id is None
    assert mention.project_id is None
    assert mention.entity.name == "RetryQueue"


def test_the_same_name_in_two_projects_is_two_entities(make_memory, project, other_project):
    make_memory(project=project, content="RetryQueue is here.")
    make_memory(project=other_project, content="RetryQueue is there.")
    assert Entity.objects.filter(key="retryqueue").count() == 2


def test_reading_a_writes_entities_costs_two_statements(make_memory, project):
    make_memory(project=project, content="RetryQueue exists")  # its entity is known
    new = make_memory(project=project, content="Nothing named.")
    EntityMention.objects.all().delete()
    with CaptureQueriesContext(connection) as queries:
        entities.refresh([new.pk])
    assert len(queries) == 2, [str(q["sql"])[:60] for q in queries]  # read, write
    with CaptureQueriesContext(connection) as queries:
        entities.refresh([new.pk, make_memory(project=project, content="OrderBook here").pk])
    before = len(queries)
    services.memory_update(
        memory=new, actor=Actor.system("tests"), content="RetryQueue in src/app.py uses LedgerX."
    )
    with CaptureQueriesContext(connection) as queries:
        # read (with the project's words); insert the new entities and replace the mentions
        entities.refresh([new.pk])
    assert len(queries) == 2
    assert before > 2  # (the second memory's own write was in it)
    assert {m.entity.name for m in EntityMention.objects.filter(memory_id=new.pk)} == {
        "RetryQueue", "src/app.py", "LedgerX"}  # fmt: skip


def test_refresh_all_reads_memories_written_before(make_memory, project):
    memories = retry_project(make_memory, project)
    EntityMention.objects.all().delete()
    Entity.objects.all().delete()
    assert entities.refresh_all(project_id=project.pk) == 8
    assert EntityMention.objects.filter(memory_id=memories[0].pk).count() == 3


# --- the graph ----------------------------------------------------------------------------------


def by_name(found: list[graph.Neighbour]) -> dict[str, graph.Neighbour]:
    return {n.name: n for n in found}


def test_neighbours_with_weights_and_types(make_memory, project):
    retry_project(make_memory, project)
    near = by_name(graph.neighbours(entity=entity(project, "RetryQueue")))
    assert set(near) == {"Stripe", "src/billing/queue.py", "src/billing/tasks.py",
                         "src/billing/retry.py"}  # fmt: skip
    assert near["Stripe"].weight == 2
    assert near["Stripe"].type == "mentions"
    assert near["src/billing/queue.py"].weight == 1
    assert near["src/billing/queue.py"].type == "defined_in"
    assert next(iter(near)) == "Stripe"  # heaviest first


def test_an_inactive_memorys_mentions_do_not_count(make_memory, project, reviewer_actor):
    memories = retry_project(make_memory, project)
    services.memory_reject(memory=memories[2], actor=reviewer_actor, reason="old")
    near = by_name(graph.neighbours(entity=entity(project, "RetryQueue")))
    assert near["Stripe"].weight == 1
    assert "src/billing/retry.py" not in near
    assert "src/billing/retry.py" not in {
        e.name for e in graph.entities_search(project=project, q="src/")
    }


def test_imports_sentences_type_the_link(make_memory, project):
    make_memory(project=project, content="billing.tasks imports RetryQueue at start.")
    near = by_name(graph.neighbours(entity=entity(project, "billing.tasks")))
    assert near["RetryQueue"].type == "imports"


def test_depth_walks_further_with_a_bounded_fan_out(make_memory, project):
    make_memory(project=project, content="AlphaOne calls BetaTwo")
    make_memory(project=project, content="BetaTwo calls GammaThree")
    make_memory(project=project, content="GammaThree calls DeltaFour")
    alpha = entity(project, "AlphaOne")
    assert [n.name for n in graph.neighbours(entity=alpha)] == ["BetaTwo"]
    deep = graph.neighbours(entity=alpha, depth=3)
    assert [(n.name, n.depth) for n in deep] == [("BetaTwo", 1), ("GammaThree", 2),
                                                ("DeltaFour", 3)]  # fmt: skip
    assert deep[1].via == entity(project, "BetaTwo").pk
    for n in range(25):
        make_memory(project=project, content=f"AlphaOne uses Helper{n}Thing")
    assert len(graph.neighbours(entity=alpha)) == graph.FAN_OUT
    with pytest.raises(ValueError, match="depth"):
        graph.neighbours(entity=alpha, depth=4)


def test_neighbours_cost_two_statements_a_hop(make_memory, project):
    retry_project(make_memory, project)
    retry = entity(project, "RetryQueue")
    with CaptureQueriesContext(connection) as queries:
        graph.neighbours(entity=retry, depth=2)
    assert len(queries) == 4


def test_a_reviewers_links_override_the_mentions(make_memory, project, reviewer_actor):
    retry_project(make_memory, project)
    make_memory(project=project, content="OrderBook is unrelated")
    retry, stripe = entity(project, "RetryQueue"), entity(project, "Stripe")
    order = entity(project, "OrderBook")
    graph.entity_link_remove(entity=retry, other=stripe, actor=reviewer_actor)
    graph.entity_link_set(entity=retry, other=order, type="imports", actor=reviewer_actor)
    near = by_name(graph.neighbours(entity=retry))
    assert "Stripe" not in near
    assert near["OrderBook"].type == "imports"
    assert near["OrderBook"].source == "reviewer"
    assert near["OrderBook"].weight == 0
    link = EntityLink.objects.get(first=min(retry.pk, order.pk), second=max(retry.pk, order.pk))
    assert link.actor_label == reviewer_actor.label
    assert link.created_by == reviewer_actor.user
    # Said again: the link is back.
    graph.entity_link_set(entity=stripe, other=retry, type=LinkType.MENTIONS, actor=reviewer_actor)
    assert by_name(graph.neighbours(entity=retry))["Stripe"].weight == 2


def test_links_stay_inside_a_project(make_memory, project, other_project, reviewer_actor):
    make_memory(project=project, content="RetryQueue here")
    make_memory(project=other_project, content="OrderBook there")
    retry = Entity.objects.get(key="retryqueue")
    order = Entity.objects.get(key="orderbook")
    with pytest.raises(ValidationError, match="same project"):
        graph.entity_link_set(entity=retry, other=order, type="mentions", actor=reviewer_actor)
    with pytest.raises(ValidationError, match="own neighbour"):
        graph.entity_link_set(entity=retry, other=retry, type="mentions", actor=reviewer_actor)


def test_search_by_prefix_and_word_part_in_any_case(make_memory, project, other_project):
    retry_project(make_memory, project)
    make_memory(project=other_project, content="RetryQueue elsewhere")
    assert [e.name for e in graph.entities_search(project=project, q="retryq")] == ["RetryQueue"]
    assert {e.name for e in graph.entities_search(project=project, q="QUEUE")} == {
        "RetryQueue",
        "src/billing/queue.py",
    }
    assert {e.kind for e in graph.entities_search(project=project, kind="path")} == {"path"}


def test_search_walks_the_indexes(make_memory, project):
    retry_project(make_memory, project)
    Entity.objects.bulk_create(
        Entity(project=project, name=f"Name{n}", key=f"name{n}", kind="code", parts=[f"name{n}"])
        for n in range(3000)
    )
    query = graph.entities_search(project=project, q="queue").order_by("key", "id")[:50]
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE knowledge_entities")
        cursor.execute("SET LOCAL enable_seqscan = off")  # 3,000 rows are read at once anyway
        sql, params = query.query.sql_with_params()
        cursor.execute(f"EXPLAIN {sql}", params)
        plan = "\n".join(row[0] for row in cursor.fetchall())
    assert "entity_parts_idx" in plan, plan
    assert "entity_project_key_idx" in plan or "entity_key_unique" in plan


def test_the_command_reads_a_projects_memories_again(make_memory, project):
    from io import StringIO

    from django.core.management import CommandError, call_command

    retry_project(make_memory, project)
    EntityMention.objects.all().delete()
    out = StringIO()
    call_command("read_entities", project=project.slug, stdout=out)
    assert "8 mentions read." in out.getvalue()
    with pytest.raises(CommandError, match="No project"):
        call_command("read_entities", project="nowhere")
