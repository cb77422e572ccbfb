"""Users' preferences over REST: set, read, list by category, delete, history; for every
project proposed and approved; a user's data deleted in one call; other projects' users
unreadable; secrets refused; unknown fields refused."""

from __future__ import annotations

import json

import pytest
from rest_framework.test import APIClient

from memories.models import Membership, Role
from people.models import Preference, PreferenceEvent
from tests.api.conftest import client_with_key, url
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db


def pref(project, user, key=None, *more):
    return url(project, "users", user, "preferences", *([key] if key else []), *more)


def test_set_read_change_delete_one_preference(agent, project):
    created = agent.put(
        pref(project, "u-42", "language"), {"value": "de", "category": "style"}, format="json"
    )
    assert created.status_code == 201, created.json()
    body = created.json()
    assert (body["key"], body["value"], body["category"], body["scope"]) == (
        "language",
        "de",
        "style",
        "project",
    )
    assert body["updatedBy"] == "api-key:agent"
    assert agent.get(pref(project, "u-42", "language")).json()["value"] == "de"
    # A JSON value of any shape; the category left out stays as it was.
    changed = agent.put(
        pref(project, "u-42", "language"), {"value": {"answers": "de", "code": "en"}}, format="json"
    )
    assert changed.status_code == 200
    assert changed.json()["category"] == "style"
    assert changed.json()["value"] == {"answers": "de", "code": "en"}
    # A blank category takes it away (as the schema offers "").
    blank = agent.put(
        pref(project, "u-42", "language"), {"value": {}, "category": ""}, format="json"
    )
    assert (blank.status_code, blank.json()["category"]) == (200, "")
    assert agent.delete(pref(project, "u-42", "language")).status_code == 204
    assert agent.get(pref(project, "u-42", "language")).status_code == 404
    assert agent.delete(pref(project, "u-42", "language")).status_code == 404
    history = agent.get(pref(project, "u-42", "language", "history")).json()
    assert [e["action"] for e in history] == ["delete", "set", "set", "set"]
    assert history[2]["changes"]["value"] == ["de", {"answers": "de", "code": "en"}]
    assert history[3]["actor"] == "api-key:agent"


def test_setting_the_same_value_again_changes_nothing(agent, project):
    for _ in range(2):
        agent.put(pref(project, "u1", "tone"), {"value": "short"}, format="json")
    assert PreferenceEvent.objects.filter(key="tone").count() == 1


def test_all_of_a_users_preferences_by_key_and_by_category(agent, project):
    for key, category in [("tone", "style"), ("language", "style"), ("editor", "tools")]:
        agent.put(pref(project, "u1", key), {"value": key, "category": category}, format="json")
    agent.put(pref(project, "u2", "tone"), {"value": "long"}, format="json")
    every = agent.get(pref(project, "u1")).json()
    assert [p["key"] for p in every["preferences"]] == ["editor", "language", "tone"]
    style = agent.get(pref(project, "u1") + "?category=style").json()
    assert [p["key"] for p in style["preferences"]] == ["language", "tone"]
    assert agent.get(pref(project, "nobody")).json()["preferences"] == []


@pytest.mark.parametrize(
    ("body", "field", "says"),
    [
        ({"value": "de", "scope": "global"}, "scope", "Unknown field"),
        ({"category": "style"}, "value", "required"),
        ({"value": None}, "value", "null"),
        ({"value": "x" * 5000}, "value", "4000"),
        ({"value": "de", "category": "has space"}, "category", "Letters"),
        ({"value": "de", "category": "\u0084"}, "category", "Letters"),  # not stripped to ""
    ],
)
def test_bad_input_says_what_to_fix_and_stores_nothing(agent, project, body, field, says):
    answer = agent.put(pref(project, "u1", "language"), body, format="json")
    assert answer.status_code == 400
    assert says in str(answer.json()["error"]["fields"][field])
    assert not Preference.objects.exists()


@pytest.mark.parametrize(
    ("user", "key"), [("u 1", "language"), ("u1", "lang uage"), ("-u1", "language")]
)
def test_a_bad_user_id_or_key_is_a_400(agent, project, user, key):
    answer = agent.put(pref(project, user, key), {"value": "de"}, format="json")
    assert answer.status_code == 400, answer.json()


def test_a_secret_in_a_value_is_refused_where_it_is(agent, project):
    token = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
    answer = agent.put(
        pref(project, "u1", "git"), {"value": {"auth": {"token": token}}}, format="json"
    )
    assert answer.status_code == 400
    assert "value.auth.token" in str(answer.json()["error"]["fields"])
    assert not Preference.objects.exists()


def test_a_secret_is_redacted_under_the_redact_policy(agent, project):
    project.policy.secrets = "redact"
    project.policy.save()
    token = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
    answer = agent.put(pref(project, "u1", "git"), {"value": ["keep", token]}, format="json")
    assert answer.status_code == 201
    stored = Preference.objects.get().value
    assert stored[0] == "keep"
    assert token not in stored[1]
    assert "REDACTED" in stored[1]


def test_another_projects_key_never_reads_or_writes_its_users(agent, project, other_project):
    agent.put(pref(project, "u1", "language"), {"value": "de"}, format="json")
    stranger = client_with_key(other_project, "stranger")
    assert stranger.get(pref(project, "u1", "language")).status_code == 404
    assert stranger.get(pref(project, "u1")).status_code == 404
    assert (
        stranger.put(pref(project, "u1", "language"), {"value": "fr"}, format="json").status_code
        == 404
    )
    assert stranger.delete(url(project, "users", "u1")).status_code == 404
    # The same user id in its own project is another person's.
    assert stranger.get(pref(other_project, "u1", "language")).status_code == 404
    assert Preference.objects.get().value == "de"


def test_a_viewer_reads_preferences_and_a_reviewer_edits_them(project):
    viewer, reviewer = UserFactory(), UserFactory()
    Membership.objects.create(user=viewer, project=project, role=Role.VIEWER)
    Membership.objects.create(user=reviewer, project=project, role=Role.REVIEWER)
    as_viewer, as_reviewer = APIClient(), APIClient()
    as_viewer.force_authenticate(viewer)
    as_reviewer.force_authenticate(reviewer)
    assert (
        as_reviewer.put(pref(project, "u1", "tone"), {"value": "short"}, format="json").status_code
        == 201
    )
    assert as_viewer.get(pref(project, "u1", "tone")).json()["value"] == "short"
    refused = as_viewer.put(pref(project, "u1", "tone"), {"value": "long"}, format="json")
    assert refused.status_code == 403
    assert "reviewer role" in refused.json()["error"]["message"]
    assert as_viewer.delete(url(project, "users", "u1")).status_code == 403
    assert Preference.objects.get().value == "short"


def test_deleting_a_users_data_keeps_a_record_without_the_content(agent, project):
    agent.put(pref(project, "u1", "language"), {"value": "secretly-german"}, format="json")
    agent.put(pref(project, "u1", "tone"), {"value": "short"}, format="json")
    agent.put(pref(project, "u2", "tone"), {"value": "long"}, format="json")
    erased = agent.delete(url(project, "users", "u1"))
    assert erased.status_code == 200
    assert erased.json() == {"userId": "u1", "preferences": 2, "conversations": 0, "messages": 0}
    assert list(Preference.objects.values_list("user_ref", flat=True)) == ["u2"]
    left = PreferenceEvent.objects.filter(user_ref="u1")
    assert [e.action for e in left] == ["erase"]
    assert "secretly-german" not in str(list(left.values()))
    assert left.get().actor_label == "api-key:agent"
    # Twice: nothing more to delete, and the second call is recorded too.
    again = agent.delete(url(project, "users", "u1")).json()
    assert again["preferences"] == 0


def test_a_preference_for_every_project_is_in_force_once_approved(
    agent, project, other_project, reviewer
):
    proposed = agent.post(
        "/api/preferences/global",
        {"userId": "u1", "key": "language", "value": "de", "category": "style"},
        format="json",
    )
    assert proposed.status_code == 202, proposed.json()
    assert proposed.json()["status"] == "pending"
    elsewhere = client_with_key(other_project, "elsewhere")
    # Not in force anywhere until approved; the other project does not even see it.
    assert agent.get(pref(project, "u1", "language")).status_code == 404
    assert elsewhere.get("/api/preferences/global").json() == []
    # A key never approves: a person who reviews global memories does.
    assert (
        agent.patch(f"/api/preferences/global/{proposed.json()['id']}/approve").status_code == 403
    )
    person = APIClient()
    person.force_authenticate(reviewer)
    approved = person.patch(f"/api/preferences/global/{proposed.json()['id']}/approve")
    assert approved.status_code == 200
    assert approved.json()["status"] == "approved"
    seen = elsewhere.get(pref(other_project, "u1", "language")).json()
    assert (seen["value"], seen["scope"]) == ("de", "global")
    # A project's own preference wins over the one for every project.
    agent.put(pref(project, "u1", "language"), {"value": "fr"}, format="json")
    mine = agent.get(pref(project, "u1")).json()["preferences"]
    assert [(p["key"], p["value"], p["scope"]) for p in mine] == [("language", "fr", "project")]


def test_a_newer_approved_proposal_replaces_the_one_in_force(agent, reviewer):
    person = APIClient()
    person.force_authenticate(reviewer)
    for value in ["de", "fr"]:
        proposed = agent.post(
            "/api/preferences/global",
            {"userId": "u1", "key": "language", "value": value},
            format="json",
        )
        person.patch(f"/api/preferences/global/{proposed.json()['id']}/approve")
    in_force = Preference.objects.filter(project__isnull=True, status="approved")
    assert [p.value for p in in_force] == ["fr"]
    rejected = agent.post(
        "/api/preferences/global", {"userId": "u1", "key": "language", "value": "es"}, format="json"
    ).json()
    assert (
        person.patch(f"/api/preferences/global/{rejected['id']}/reject").json()["status"]
        == "rejected"
    )
    assert [p.value for p in in_force.all()] == ["fr"]


def test_deleting_a_users_data_takes_their_conversations_and_no_one_elses(agent, project):
    from people import conversations
    from people.conversations import NewMessage
    from people.models import Conversation, Message

    for user in ("u1", "u1", "u2"):
        conversations.conversation_save(
            project=project,
            user_id=user,
            agent_id="bot",
            messages=[
                NewMessage("user", "Always answer in German."),
                NewMessage("assistant", "Ja."),
            ],
        )
    erased = agent.delete(url(project, "users", "u1")).json()
    assert (erased["conversations"], erased["messages"]) == (2, 4)
    assert list(Conversation.objects.values_list("user_ref", flat=True)) == ["u2"]
    assert Message.objects.count() == 2
    assert agent.get(url(project, "conversations") + "?userId=u1").json()["conversations"] == []


def test_control_characters_are_stripped_from_a_value_keys_included(agent, project):
    value = {"a\u0000b": ["x\u0000y", "\ud800z"], "tone": "short\u0007"}
    body = json.dumps({"value": value})  # ASCII escapes: the lone surrogate travels as \\ud800
    answer = agent.put(pref(project, "u1", "odd"), body, content_type="application/json")
    assert answer.status_code == 201, answer.json()
    assert Preference.objects.get().value == {"ab": ["xy", "z"], "tone": "short"}
