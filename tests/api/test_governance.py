"""Governance: a global proposal not yet approved is read only by global reviewers and the
project that proposed it; a viewer reads and never writes (REST, MCP); supersede refuses a
cycle at any depth."""

from __future__ import annotations

import itertools
import json

import pytest
from django.contrib.auth.models import Permission
from django.db import connection
from django.db.models import GeneratedField
from django.test import Client
from django.urls import URLPattern, get_resolver
from django.utils import timezone
from rest_framework.test import APIClient

from knowledge.models import MemoryPair
from memories.models import (
    Membership,
    Memory,
    MemoryEvent,
    ReviewStatus,
    Role,
    Run,
    RunMemory,
    Tier,
)
from people import conversations
from people.conversations import NewMessage
from people.models import Conversation, Message, Preference, PreferenceEvent
from tests.api.conftest import client_with_key, url
from tests.factories import MemoryFactory, ProjectFactory, RunFactory, UserFactory

pytestmark = pytest.mark.django_db


def person(role_in: dict | None = None, *, global_reviewer: bool = False) -> APIClient:
    user = UserFactory()
    for project, role in (role_in or {}).items():
        Membership.objects.create(user=user, project=project, role=role)
    if global_reviewer:
        user.user_permissions.add(Permission.objects.get(codename="review_global_memory"))
    client = APIClient()
    client.force_login(user)
    return client


@pytest.fixture
def two():
    return ProjectFactory(slug="alpha"), ProjectFactory(slug="beta")


# --- a pending global proposal -----------------------------------------------------------------


def _listed(client, memory_id: int) -> bool:
    ids = set()
    for active in ("true", "false"):
        response = client.get(f"/api/memories/global?active={active}")
        assert response.status_code == 200, response.content
        ids |= {m["id"] for m in response.json()["memories"]}
    return memory_id in ids


def test_a_pending_proposal_is_read_only_by_global_reviewers_and_its_project(two):
    alpha, beta = two
    proposed = client_with_key(alpha).post(
        "/api/memories/global",
        {"type": "pattern", "content": "Use UTC in every log."},
        format="json",
    )
    assert proposed.status_code == 201, proposed.content
    proposal = proposed.json()["id"]
    detail = f"/api/memories/global/{proposal}"

    readers = {
        "another key of the proposing project": client_with_key(alpha, "second"),
        "a viewer of the proposing project": person({alpha: Role.VIEWER}),
        "a global reviewer": person(global_reviewer=True),
    }
    others = {
        "a key of another project": client_with_key(beta),
        "a maintainer of another project": person({beta: Role.MAINTAINER}),
    }
    for who, client in readers.items():
        assert client.get(detail).status_code == 200, who
        assert _listed(client, proposal), who
    for who, client in others.items():
        response = client.get(detail)
        assert response.status_code == 404, who
        assert "Use UTC" not in response.content.decode(), who
        assert not _listed(client, proposal), who

    approved = readers["a global reviewer"].patch(f"{detail}/approve")
    assert approved.status_code == 200, approved.content
    for who, client in others.items():
        assert client.get(detail).status_code == 200, who  # approved: everyone's
        assert _listed(client, proposal), who


def test_another_project_cannot_reach_a_pending_proposal_through_supersede(two):
    alpha, beta = two
    proposal = client_with_key(alpha).post(
        "/api/memories/global",
        {"type": "pattern", "content": "Use UTC in every log."},
        format="json",
    )
    proposal_id = proposal.json()["id"]
    agent = client_with_key(beta)
    mine = MemoryFactory(project=beta, content="Logs use local time.")
    refused = agent.post(
        url(beta, "memories", mine.pk, "supersede"), {"by": proposal_id}, format="json"
    )
    assert refused.status_code == 400
    assert refused.json()["error"]["fields"]["by"] == [f"No memory {proposal_id} in this project."]
    created = agent.post(
        url(beta, "memories"),
        {"type": "pattern", "content": "Logs use UTC.", "supersedes": [proposal_id]},
        format="json",
    )
    assert created.status_code == 400
    assert "supersedes" in created.json()["error"]["fields"]
    assert not MemoryPair.objects.exists()
    assert Memory.objects.get(pk=proposal_id).superseded_by_id is None


def test_the_review_pages_and_the_admin_hide_a_pending_proposal_from_others(two):
    alpha, beta = two
    proposal_id = (
        client_with_key(alpha)
        .post(
            "/api/memories/global",
            {"type": "pattern", "content": "Rotate keys yearly."},
            format="json",
        )
        .json()["id"]
    )
    stranger = UserFactory(is_staff=True)
    stranger.user_permissions.add(
        *Permission.objects.filter(codename__in=["view_memory", "view_memoryevent"])
    )
    Membership.objects.create(user=stranger, project=beta, role=Role.REVIEWER)
    member = UserFactory()
    Membership.objects.create(user=member, project=alpha, role=Role.VIEWER)
    outside, inside = Client(), Client()
    outside.force_login(stranger)
    inside.force_login(member)

    assert outside.get(f"/review/memories/{proposal_id}/").status_code == 404
    assert outside.get(f"/review/memories/{proposal_id}/row/").status_code == 404
    for page in ("/review/", "/review/queue/", "/review/queue/?scope=global"):
        assert "Rotate keys yearly" not in outside.get(page).content.decode(), page
    assert outside.get("/review/").context["global_waiting"] == 0
    assert "Rotate keys yearly" not in outside.get("/admin/memories/memory/").content.decode()
    events = outside.get("/admin/memories/memoryevent/").context["cl"].result_list
    assert proposal_id not in [event.memory_id for event in events]

    assert inside.get(f"/review/memories/{proposal_id}/").status_code == 200
    assert "Rotate keys yearly" in inside.get("/review/queue/").content.decode()


# --- viewers read and never write --------------------------------------------------------------

MEMORY, RUN, PAIR, GLOBAL, CONVERSATION = "memory", "run", "pair", "global", "conversation"
CHAT = [{"role": "user", "content": "Always tag releases."}]
PROPOSAL = "proposal"
# (URL name, method, what its arguments are, a body a reviewer's call would be valid with)
WRITES = [
    ("memories", "post", None, {"type": "pattern", "content": "x"}),
    ("memory", "patch", MEMORY, {"content": "changed"}),
    ("memory", "delete", MEMORY, None),
    ("memory-approve", "patch", MEMORY, None),
    ("memory-reject", "patch", MEMORY, {"reason": "no"}),
    ("memory-flag", "post", MEMORY, {"reason": "Looks stale."}),
    ("memory-restore", "post", MEMORY, None),
    ("memory-restore-content", "post", MEMORY, None),
    ("memory-supersede", "post", MEMORY, {"by": "other"}),
    ("conflict-resolve", "post", PAIR, {"action": "dismiss"}),
    ("changes", "post", None, {"paths": ["src/a.py"], "ref": "abc123"}),
    ("runs", "post", None, {"externalId": "task-9"}),
    ("run-outcome", "post", RUN, {"outcome": "succeeded"}),
    ("context", "post", None, {"tokenBudget": 500, "runId": "run"}),
    ("global-memories", "post", None, {"type": "pattern", "content": "Global words."}),
    ("global-memory-approve", "patch", GLOBAL, None),
    ("global-memory-reject", "patch", GLOBAL, {"reason": "no"}),
    ("user-data", "delete", None, None),
    ("preference", "put", None, {"value": "fr"}),
    ("preference", "delete", None, None),
    ("global-preferences", "post", None, {"userId": "bob", "key": "tone", "value": "short"}),
    ("global-preference-approve", "patch", PROPOSAL, None),
    ("global-preference-reject", "patch", PROPOSAL, None),
    ("conversations", "post", None, {"agentId": "a", "userId": "u", "messages": CHAT}),
    ("conversation-messages", "post", CONVERSATION, {"messages": CHAT}),
    ("conversation-distill", "post", CONVERSATION, None),
]
# What only reads, or is not the API's own (its schema and docs; any other path).
READ_ONLY = {
    "projects", "project", "memory-history", "conflicts", "conflict", "run", "export",
    "preferences", "preference-history",
}  # fmt: skip


def test_the_table_covers_every_write_of_the_api():
    api = get_resolver().namespace_dict["api"][1]
    writes = set()
    for pattern in api.url_patterns:
        if not isinstance(pattern, URLPattern) or pattern.name in (None, "schema", "docs"):
            continue
        view = getattr(pattern.callback, "view_class", None)
        for method in ("post", "put", "patch", "delete"):
            if view is not None and hasattr(view, method):
                writes.add((pattern.name, method))
    assert writes == {(name, method) for name, method, _, _ in WRITES}
    assert not {name for name, _ in writes} & READ_ONLY


@pytest.fixture
def world(two):
    alpha, _ = two
    memory = MemoryFactory(project=alpha, content="Calls to the ledger time out after 10 s.")
    other = MemoryFactory(project=alpha, content="Calls to the ledger time out after 30 s.")
    pair, _ = MemoryPair.objects.get_or_create(
        first=memory, second=other, defaults={"project": alpha, "kind": "conflict"}
    )
    run = RunFactory(project=alpha)
    proposal = client_with_key(alpha).post(
        "/api/memories/global", {"type": "pattern", "content": "Use UTC."}, format="json"
    )
    Preference.objects.create(
        project=alpha, user_ref="bob", key="language", value="de", updated_by="t"
    )
    proposed = client_with_key(alpha).post(
        "/api/preferences/global",
        {"userId": "bob", "key": "language", "value": "de"},
        format="json",
    )
    conversation, _ = conversations.conversation_save(
        project=alpha, user_id="u", agent_id="a", messages=[NewMessage("user", "We use UTC.")]
    )
    return {
        "project": alpha,
        PROPOSAL: proposed.json()["id"],
        CONVERSATION: conversation,
        MEMORY: memory,
        "other": other,
        PAIR: pair,
        RUN: run,
        GLOBAL: Memory.objects.get(pk=proposal.json()["id"]),
    }


def _stored():
    return (
        sorted(
            Memory.objects.values_list(
                "id", "content", "updated_at", "stale_at", "review_status", "active"
            )
        ),
        MemoryEvent.objects.count(),
        sorted(Run.objects.values_list("id", "status", "prompt_hash")),
        RunMemory.objects.count(),
        sorted(MemoryPair.objects.values_list("id", "status")),
        sorted(Preference.objects.values_list("id", "value", "status")),
        PreferenceEvent.objects.count(),
        sorted(Conversation.objects.values_list("id", "message_count")),
        Message.objects.count(),
    )


def _call(client, world, name, method, target, body):
    project = world["project"]
    base = (
        "/api/preferences/global"
        if name.startswith("global-preference")
        else "/api/memories/global"
        if name.startswith("global-")
        else f"/api/projects/{project.slug}"
    )
    path = {
        "memories": "/memories",
        "memory": f"/memories/{world[MEMORY].pk}",
        "memory-approve": f"/memories/{world[MEMORY].pk}/approve",
        "memory-reject": f"/memories/{world[MEMORY].pk}/reject",
        "memory-flag": f"/memories/{world[MEMORY].pk}/flag",
        "memory-restore": f"/memories/{world[MEMORY].pk}/restore",
        "memory-restore-content": f"/memories/{world[MEMORY].pk}/restore-content",
        "memory-supersede": f"/memories/{world[MEMORY].pk}/supersede",
        "conflict-resolve": f"/conflicts/{world[PAIR].pk}/resolve",
        "changes": "/changes",
        "runs": "/runs",
        "run-outcome": f"/runs/{world[RUN].pk}/outcome",
        "context": "/context",
        "global-memories": "",
        "global-memory-approve": f"/{world[GLOBAL].pk}/approve",
        "global-memory-reject": f"/{world[GLOBAL].pk}/reject",
        "user-data": "/users/bob",
        "preference": "/users/bob/preferences/language",
        "global-preferences": "",
        "global-preference-approve": f"/{world[PROPOSAL]}/approve",
        "global-preference-reject": f"/{world[PROPOSAL]}/reject",
        "conversations": "/conversations",
        "conversation-messages": f"/conversations/{world[CONVERSATION].pk}/messages",
        "conversation-distill": f"/conversations/{world[CONVERSATION].pk}/distill",
    }[name]
    if body is not None:
        body = {
            key: world["other"].pk
            if value == "other"
            else world[RUN].pk
            if value == "run"
            else value
            for key, value in body.items()
        }
    return getattr(client, method)(base + path, body, format="json")


@pytest.mark.parametrize(("name", "method", "target", "body"), WRITES)
def test_a_viewer_reads_and_never_writes(world, name, method, target, body):
    viewer = person({world["project"]: Role.VIEWER})
    assert viewer.get(url(world["project"], "memories", world[MEMORY].pk)).status_code == 200
    before = _stored()
    response = _call(viewer, world, name, method, target, body)
    assert response.status_code == 403, (name, response.content)
    assert response.json()["error"]["code"] == "forbidden"
    assert _stored() == before


@pytest.mark.parametrize(("name", "method", "target", "body"), WRITES)
def test_a_reviewer_may_make_each_of_these_writes(world, name, method, target, body):
    reviewer = person({world["project"]: Role.REVIEWER}, global_reviewer=True)
    response = _call(reviewer, world, name, method, target, body)
    # (Restoring what is not archived or compressed is a 409: allowed, nothing to do.)
    assert response.status_code in (200, 201, 202, 204, 409), (name, response.content)
    assert response.status_code != 409 or name.startswith("memory-restore"), name


def test_a_viewer_signed_in_cannot_use_the_mcp_tools(world):
    viewer = person({world["project"]: Role.VIEWER})
    flag = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {
            "name": "flag_memory",
            "arguments": {"memory_id": world[MEMORY].pk, "reason": "stale"},
        },
    }
    response = viewer.post(
        "/mcp",
        json.dumps(flag),
        content_type="application/json",
        HTTP_ACCEPT="application/json, text/event-stream",
    )
    assert response.status_code == 401
    assert Memory.objects.get(pk=world[MEMORY].pk).stale_at is None


# --- supersede refuses a cycle -----------------------------------------------------------------


def _supersede(client, project, memory, by):
    return client.post(
        url(project, "memories", memory.pk, "supersede"), {"by": by.pk}, format="json"
    )


def test_a_supersede_that_would_close_a_cycle_is_refused_and_says_so(project):
    agent = client_with_key(project)
    a, b, c = (MemoryFactory(project=project, content=f"Memory {n}.") for n in "ABC")
    assert _supersede(agent, project, a, b).status_code == 200
    assert _supersede(agent, project, b, c).status_code == 200
    refused = _supersede(agent, project, c, a)
    assert refused.status_code == 400, refused.content
    [message] = refused.json()["error"]["fields"]["by"]
    assert "cycle" in message
    assert f"{c.pk} → {a.pk} → {b.pk} → {c.pk}" in message
    assert Memory.objects.get(pk=c.pk).superseded_by_id is None


def test_a_cycle_is_refused_however_long_the_chain(project):
    """Longer than any limit a walk along the chain might have: 0 by 1 by ... by 104, each
    archived as a supersede leaves it (copies of one memory, made in one statement)."""
    first = MemoryFactory(project=project)
    table, now = Memory._meta.db_table, timezone.now()
    columns = [
        f.column
        for f in Memory._meta.concrete_fields
        if f.column != "id" and not isinstance(f, GeneratedField)
    ]
    with connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO {table} ({', '.join(columns)})"
            f" SELECT {', '.join(columns)} FROM {table}, generate_series(1, 104) WHERE id = %s",
            [first.pk],
        )
    chain = list(Memory.objects.filter(project=project).order_by("id"))
    for older, newer in itertools.pairwise(chain):
        Memory.objects.filter(pk=older.pk).update(
            superseded_by=newer, superseded_at=now, archived_at=now, active=False, tier=Tier.FROZEN
        )
    refused = _supersede(client_with_key(project), project, chain[-1], chain[0])
    assert refused.status_code == 400, refused.content
    assert "cycle" in refused.json()["error"]["fields"]["by"][0]
    assert Memory.objects.get(pk=chain[-1].pk).superseded_by_id is None
    assert Memory.objects.get(pk=chain[-1].pk).review_status == ReviewStatus.PENDING
