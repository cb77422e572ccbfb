"""The entity graph in the API: search by name, one entity with its memories and neighbours."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from knowledge.models import Entity, EntityTerm
from tests.api.conftest import client_with_key, url

pytestmark = pytest.mark.django_db

RETRY = [
    "RetryQueue in src/billing/queue.py retries Stripe webhooks",
    "src/billing/tasks.py enqueues into RetryQueue",
    "RetryQueue drops Stripe events after 5 attempts (src/billing/retry.py)",
]


@pytest.fixture
def retry(project, make_memory):
    EntityTerm.objects.create(project=project, name="Stripe")
    return [make_memory(project=project, content=content) for content in RETRY]


def test_three_memories_naming_retryqueue_make_a_graph(agent, project, retry):
    found = agent.get(url(project, "entities"), {"q": "RetryQueue"})
    assert found.status_code == 200, found.json()
    entities = found.json()["entities"]
    assert [e["name"] for e in entities] == ["RetryQueue"]
    assert entities[0]["kind"] == "code"
    assert found.json()["next"] is None

    detail = agent.get(url(project, "entities", entities[0]["id"])).json()
    assert detail["name"] == "RetryQueue"
    assert [m["id"] for m in detail["memories"]] == sorted((m.pk for m in retry), reverse=True)
    assert detail["memories"][0]["content"] == RETRY[2]
    near = {n["name"]: n for n in detail["neighbours"]}
    assert {name: (n["weight"], n["type"]) for name, n in near.items()} == {
        "Stripe": (2, "mentions"),
        "src/billing/queue.py": (1, "defined_in"),
        "src/billing/tasks.py": (1, "defined_in"),
        "src/billing/retry.py": (1, "defined_in"),
    }
    assert detail["neighbours"][0]["name"] == "Stripe"  # heaviest first
    stripe = near["Stripe"]
    assert stripe["kind"] == "term"
    assert stripe["depth"] == 1
    assert stripe["via"] == entities[0]["id"]
    assert stripe["source"] == "mentions"


def test_search_is_case_insensitive_by_prefix_and_word_part(agent, project, retry):
    def names(q):
        return {e["name"] for e in agent.get(url(project, "entities"), {"q": q}).json()["entities"]}

    assert names("retryq") == {"RetryQueue"}
    assert names("QUEUE") == {"RetryQueue", "src/billing/queue.py"}
    assert names("src/billing/") == {
        "src/billing/queue.py",
        "src/billing/tasks.py",
        "src/billing/retry.py",
    }
    kinds = agent.get(url(project, "entities"), {"kind": "term"}).json()["entities"]
    assert [e["name"] for e in kinds] == ["Stripe"]
    mine = agent.get(url(project, "entities"), {"memory": retry[1].pk}).json()["entities"]
    assert {e["name"] for e in mine} == {"RetryQueue", "src/billing/tasks.py"}


def test_the_list_pages_with_a_cursor(agent, project, make_memory):
    make_memory(project=project, content=" ".join(f"Thing{n}Name" for n in range(5)))
    first = agent.get(url(project, "entities"), {"limit": 2}).json()
    assert [e["name"] for e in first["entities"]] == ["Thing0Name", "Thing1Name"]
    second = agent.get(first["next"]).json()
    assert [e["name"] for e in second["entities"]] == ["Thing2Name", "Thing3Name"]


def test_depth_reaches_neighbours_of_neighbours(agent, project, make_memory):
    make_memory(project=project, content="AlphaOne calls BetaTwo")
    make_memory(project=project, content="BetaTwo calls GammaThree")
    alpha = Entity.objects.get(project=project, key="alphaone")
    one = agent.get(url(project, "entities", alpha.pk)).json()["neighbours"]
    assert [n["name"] for n in one] == ["BetaTwo"]
    two = agent.get(url(project, "entities", alpha.pk), {"depth": 2}).json()["neighbours"]
    assert [(n["name"], n["depth"]) for n in two] == [("BetaTwo", 1), ("GammaThree", 2)]


@pytest.mark.parametrize(
    ("params", "field", "says"),
    [
        ({"depth": "0"}, "depth", "Must be a whole number from 1 to 3 (got '0')."),
        ({"depth": "4"}, "depth", "Must be a whole number from 1 to 3 (got '4')."),
        ({"depth": "deep"}, "depth", "Must be a whole number from 1 to 3 (got 'deep')."),
    ],
)
def test_a_depth_outside_1_to_3_is_a_400_that_says_so(agent, project, retry, params, field, says):
    entity = Entity.objects.get(project=project, key="retryqueue")
    response = agent.get(url(project, "entities", entity.pk), params)
    assert response.status_code == 400
    assert response.json()["error"]["fields"][field] == [says]


@pytest.mark.parametrize(
    ("params", "field", "says"),
    [
        ({"q": "x" * 201}, "q", "At most 200 characters (got 201)."),
        ({"kind": "class"}, "kind", "Use one of: code, module, path, package, term."),
        ({"memory": "two"}, "memory", "Must be a whole number from 1 (got 'two')."),
        ({"limit": "0"}, "limit", "Must be a whole number from 1 to 200."),
        ({"cursor": "nonsense"}, "cursor", "Invalid cursor: use the `next` URL as given."),
    ],
)
def test_bad_list_input_is_a_400_that_says_what_to_fix(agent, project, params, field, says):
    response = agent.get(url(project, "entities"), params)
    assert response.status_code == 400
    assert response.json()["error"]["fields"][field] == [says]


def test_another_projects_entities_do_not_exist_for_a_key(project, other_project, make_memory):
    make_memory(project=other_project, content="SecretThing lives in src/secret.py")
    theirs = Entity.objects.get(project=other_project, key="secretthing")
    mine = client_with_key(project)
    assert mine.get(url(project, "entities"), {"q": "secret"}).json()["entities"] == []
    assert mine.get(url(project, "entities", theirs.pk)).status_code == 404
    assert mine.get(url(other_project, "entities")).status_code == 404
    assert mine.get(url(other_project, "entities", theirs.pk)).status_code == 404


def test_no_key_is_a_401(project, retry):
    assert APIClient().get(url(project, "entities")).status_code == 401


def test_a_person_reads_entities_with_a_role(project, retry, plain_user):
    client = APIClient()
    client.force_login(plain_user)
    assert client.get(url(project, "entities")).status_code == 404  # no role there
    from memories.models import Membership

    Membership.objects.create(user=plain_user, project=project, role="viewer")
    assert client.get(url(project, "entities")).json()["entities"]


def test_an_inactive_memorys_entities_leave_the_list(agent, project, make_memory, reviewer):
    from memories import services
    from memories.actors import Actor

    memory = make_memory(project=project, content="OldThing was here")
    assert agent.get(url(project, "entities"), {"q": "oldthing"}).json()["entities"]
    services.memory_reject(memory=memory, actor=Actor.for_user(reviewer), reason="gone")
    assert agent.get(url(project, "entities"), {"q": "oldthing"}).json()["entities"] == []


def test_query_counts_of_the_list_and_the_detail(
    agent, project, retry, make_memory, django_assert_num_queries
):
    for n in range(30):
        make_memory(project=project, content=f"RetryQueue feeds Worker{n}Pool")
    agent.get(url(project, "entities"))  # the key's first use touches it
    # the key (with its project), its concurrency slot taken, the page, the slot given back
    with django_assert_num_queries(4):
        page = agent.get(url(project, "entities"), {"limit": 50})
    assert len(page.json()["entities"]) == 35
    entity = Entity.objects.get(project=project, key="retryqueue")
    # the key, the slot taken, the entity, its memories, per hop: the neighbours read and the
    # reviewers' links; the slot given back
    with django_assert_num_queries(7):
        detail = agent.get(url(project, "entities", entity.pk))
    assert len(detail.json()["neighbours"]) == 20
    # Two hops read: the second finds nothing new (the pools name only RetryQueue), so the
    # walk stops there.
    with django_assert_num_queries(9):
        agent.get(url(project, "entities", entity.pk), {"depth": 3})


def test_the_schema_documents_the_entity_endpoints(client, reviewer):
    client.force_login(reviewer)
    schema = client.get("/api/schema/", {"format": "json"}).json()
    listing = schema["paths"]["/api/projects/{project}/entities"]["get"]
    assert {"q", "kind", "memory", "cursor", "limit"} <= {p["name"] for p in listing["parameters"]}
    detail = schema["paths"]["/api/projects/{project}/entities/{entity_id}"]["get"]
    depth = next(p for p in detail["parameters"] if p["name"] == "depth")
    assert (depth["schema"]["minimum"], depth["schema"]["maximum"]) == (1, 3)
    assert {"200", "400", "401", "404"} <= set(detail["responses"])
    neighbour = schema["components"]["schemas"]["NeighbourOut"]["properties"]
    assert {"id", "name", "kind", "weight", "type"} <= set(neighbour)
