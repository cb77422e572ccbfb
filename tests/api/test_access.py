"""Keys, sessions and isolation: a key of project A sees nothing of project B."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from django.urls import URLPattern, URLResolver, get_resolver
from rest_framework.test import APIClient

from api import throttling
from knowledge.models import Entity, MemoryPair
from memories import services
from memories.actors import Actor
from memories.models import ApiKey, Memory
from people import conversations
from people.conversations import NewMessage
from people.models import Preference
from tests.api.conftest import client_with_key, url

pytestmark = pytest.mark.django_db

# Every project-scoped route, as (method, path under the project, body).
PROJECT_ROUTES = [
    ("get", "", None),
    ("get", "memories", None),
    ("post", "memories", {"type": "pattern", "content": "x"}),
    ("get", "memories/{memory}", None),
    ("patch", "memories/{memory}", {"content": "changed"}),
    ("delete", "memories/{memory}", None),
    ("patch", "memories/{memory}/approve", None),
    ("patch", "memories/{memory}/reject", {}),
    ("get", "memories/{memory}/history", None),
    ("post", "memories/{memory}/restore", None),
    ("post", "memories/{memory}/restore-content", None),
    ("post", "memories/{memory}/supersede", {"by": 1}),
    ("post", "memories/{memory}/flag", {"reason": "looks stale"}),
    ("get", "conflicts", None),
    ("get", "conflicts/{conflict}", None),
    ("post", "conflicts/{conflict}/resolve", {"action": "dismiss"}),
    ("post", "changes", {"paths": ["src/a.py"], "ref": "abc"}),
    ("post", "runs", {"externalId": "r-1"}),
    ("get", "runs/{run}", None),
    ("post", "runs/{run}/outcome", {"outcome": "succeeded"}),
    ("get", "export", None),
    ("post", "context", {"tokenBudget": 100}),
    ("get", "entities", None),
    ("get", "entities/{entity}", None),
    ("delete", "users/{user}", None),
    ("get", "users/{user}/preferences", None),
    ("get", "users/{user}/preferences/{key}", None),
    ("put", "users/{user}/preferences/{key}", {"value": "x"}),
    ("delete", "users/{user}/preferences/{key}", None),
    ("get", "users/{user}/preferences/{key}/history", None),
    ("get", "conversations", None),
    ("post", "conversations", {"agentId": "a", "userId": "u", "messages": []}),
    ("get", "conversations/{conversation}", None),
    ("post", "conversations/{conversation}/messages", {"messages": []}),
    ("post", "conversations/{conversation}/distill", None),
]


def test_the_table_covers_every_project_route():
    api = next(p for p in get_resolver().url_patterns if str(p.pattern) == "api/")
    assert isinstance(api, URLResolver)
    routes = {
        str(p.pattern).removeprefix("projects/<slug:project>").lstrip("/")
        for p in api.url_patterns
        if isinstance(p, URLPattern) and str(p.pattern).startswith("projects/<slug:project>")
    }
    table = {
        path.replace("{memory}", "<id:memory_id>")
        .replace("{run}", "<id:run_id>")
        .replace("{conflict}", "<id:conflict_id>")
        .replace("{entity}", "<id:entity_id>")
        .replace("{user}", "<str:user>")
        .replace("{key}", "<str:key>")
        .replace("{conversation}", "<id:conversation_id>")
        for _, path, _ in PROJECT_ROUTES
    }
    assert routes == table


# Two memories that repeat each other (an open pair): words enough to say so.
SECRET = "B's secret vault token lives in the ops vault file"


@pytest.fixture
def project_b(other_project, make_memory, make_run):
    memory = make_memory(project=other_project, content=SECRET)
    other = make_memory(project=other_project, content=f"{SECRET}, again")
    run = make_run(project=other_project)
    services.run_give_memories(run=run, ranked=[(memory.pk, 0.0)])
    # Found as they were written: they say the same.
    pair = MemoryPair.objects.get(first=memory, second=other, status="open")
    Preference.objects.create(
        project=other_project, user_ref="bob", key="language", value=SECRET, updated_by="t"
    )
    return other_project, memory, run, pair


@pytest.mark.parametrize(("method", "path", "body"), PROJECT_ROUTES)
@pytest.mark.parametrize("ref", ["slug", "id"])
def test_a_key_of_project_a_gets_404_on_every_url_of_project_b(
    agent, project_b, method, path, body, ref
):
    other, memory, run, pair = project_b
    target = other.slug if ref == "slug" else str(other.pk)
    entity = Entity.objects.create(project=other, name="BSecret", key="bsecret", kind="code")
    conversation, _ = conversations.conversation_save(
        project=other, user_id="u", agent_id="a", messages=[NewMessage("user", SECRET)]
    )
    where = path.format(
        memory=memory.pk,
        run=run.pk,
        conflict=pair.pk,
        entity=entity.pk,
        conversation=conversation.pk,
        user="bob",
        key="language",
    )
    address = url(target, where).rstrip("/")
    response = getattr(agent, method)(address, body, format="json")
    missing = getattr(agent, method)(
        url("no-such-project", where).rstrip("/"),
        body,
        format="json",
    )
    assert response.status_code == missing.status_code == 404
    assert response.json()["error"]["code"] == "not_found"
    assert "B's secret" not in response.content.decode()
    stored = Memory.objects.get(pk=memory.pk)
    assert (stored.content, stored.confidence, stored.active) == (SECRET, 0.5, True)
    assert MemoryPair.objects.get(pk=pair.pk).status == "open"
    assert Preference.objects.get(project=other, user_ref="bob").value == SECRET
    assert conversation.messages.count() == 1


def test_a_key_lists_only_its_own_project(agent, project, project_b):
    body = agent.get("/api/projects/").json()
    assert [p["slug"] for p in body["projects"]] == [project.slug]


def test_global_memories_of_another_project_are_not_reachable_as_project_memories(
    agent, project, reviewer_actor
):
    shared = services.memory_create(
        project=None, type="pattern", content="g", source="run", actor=Actor.system("t")
    )
    assert agent.get(url(project, "memories", shared.pk)).status_code == 404


def test_an_agent_key_gets_403_on_approve_and_reject(agent, project, make_memory):
    memory = make_memory(project=project)
    approve = agent.patch(url(project, "memories", memory.pk, "approve"))
    reject = agent.patch(url(project, "memories", memory.pk, "reject"), {}, format="json")
    assert approve.status_code == reject.status_code == 403
    assert "human" in approve.json()["error"]["message"]
    stored = Memory.objects.get(pk=memory.pk)
    assert (stored.confidence, stored.review_status) == (0.5, "pending")


def test_a_reviewer_approves_and_rejects(reviewer_client, reviewer, project, make_memory):
    memory = make_memory(project=project)
    body = reviewer_client.patch(url(project, "memories", memory.pk, "approve")).json()
    assert (body["confidence"], body["reviewStatus"], body["approvedBy"]) == (
        1.0,
        "approved",
        reviewer.username,
    )
    assert body["approvedAt"]
    rejected = reviewer_client.patch(
        url(project, "memories", memory.pk, "reject"), {"reason": "wrong"}, format="json"
    ).json()
    assert (rejected["active"], rejected["reviewStatus"]) == (False, "rejected")


def test_a_signed_in_user_without_permissions_sees_no_project(plain_user, project):
    client = APIClient()
    client.force_login(plain_user)
    assert client.get("/api/projects/").json() == {"projects": []}
    assert client.get(url(project, "memories")).status_code == 404


def test_session_writes_need_csrf(reviewer, project):
    client = APIClient(enforce_csrf_checks=True)
    client.force_login(reviewer)
    response = client.post(
        url(project, "memories"), {"type": "pattern", "content": "x"}, format="json"
    )
    assert response.status_code == 403


@pytest.mark.parametrize(
    "header",
    ["", "Bearer", "Bearer ml_nope_nope", "Bearer a b", "Token abc", "Bearer ml__x"],
)
def test_missing_or_bad_keys_get_401(project, header):
    client = APIClient()
    if header:
        client.credentials(HTTP_AUTHORIZATION=header)
    response = client.get(url(project, "memories"))
    assert response.status_code == 401
    # Not a Bearer challenge: MCP clients read one as "go and get an OAuth token".
    assert response["WWW-Authenticate"] == 'ApiKey realm="memory-layer"'
    error = response.json()["error"]
    assert error["code"] == "unauthenticated"
    # What to fix, never the key sent, and no word an MCP client takes for an OAuth cue.
    assert "send the project's API key as 'Authorization: Bearer <key>'" in error["message"]
    assert "nope" not in error["message"]
    assert "abc" not in error["message"]
    assert "401" not in response.content.decode()
    assert "Unauthorized" not in response.content.decode()


@pytest.mark.parametrize(
    "path",
    [
        "/.well-known/oauth-protected-resource",
        "/.well-known/oauth-protected-resource/mcp",
        "/.well-known/oauth-authorization-server",
        "/.well-known/openid-configuration",
    ],
)
def test_oauth_metadata_is_absent_and_says_to_send_a_key(client, path):
    # RFC 9728 and RFC 8414: a 404 tells an OAuth client this server has no metadata.
    response = client.get(path)
    assert response.status_code == 404
    assert response.json()["error"]["message"] == (
        "This server does not use OAuth: send the project's API key as"
        " 'Authorization: Bearer <key>'."
    )


def test_a_revoked_key_stops_working(project):
    client = client_with_key(project, name="old")
    assert client.get(url(project, "memories")).status_code == 200
    services.api_key_revoke(api_key=ApiKey.objects.get(name="old"))
    assert client.get(url(project, "memories")).status_code == 401


def test_keys_are_stored_hashed_and_last_use_is_recorded(project):
    client = client_with_key(project, name="hashed")
    api_key = ApiKey.objects.get(name="hashed")
    secret = client.token.split("_", 2)[2]
    assert secret not in api_key.secret_hash
    assert api_key.last_used_at is None
    client.get(url(project, "memories"))
    api_key.refresh_from_db()
    assert api_key.last_used_at is not None


def test_throttling_per_key(project, settings, monkeypatch):
    settings.API_THROTTLE_RATE = "3/min"
    # The counters are per fixed minute: the throttle's clock stands 20 s into one, so the
    # four requests cannot straddle two windows however slow the machine.
    now = [60 * 29_500_000 + 20.0]
    monkeypatch.setattr(throttling, "time", SimpleNamespace(time=lambda: now[0]))
    first, second = client_with_key(project, "one"), client_with_key(project, "two")
    responses = [first.get(url(project, "memories")) for _ in range(4)]
    assert [r.status_code for r in responses] == [200, 200, 200, 429]
    assert int(responses[-1]["Retry-After"]) == 40
    assert second.get(url(project, "memories")).status_code == 200
    now[0] += 40  # the next minute: a new budget
    assert first.get(url(project, "memories")).status_code == 200
