"""Conversations over the API: saved, appended to, read, listed and searched, distilled into
memories for review; strict input with errors that say what to fix; other projects' keys
get 404; query counts pinned."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from memories.models import Membership, Memory, Role
from people.models import Conversation, Message
from tests.api.conftest import client_with_key, url
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db

CHAT = {
    "agentId": "support-bot",
    "userId": "user-42",
    "title": "Login trouble",
    "messages": [
        {"role": "user", "content": "I cannot log in. Always answer in German, please."},
        {"role": "assistant", "content": "Ich helfe gerne.", "sentAt": "2031-03-01T12:00:00Z"},
    ],
}


def save(client, project, body=CHAT):
    response = client.post(url(project, "conversations"), body, format="json")
    assert response.status_code == 201, response.json()
    return response.json()


def test_save_then_read_a_conversation(agent, project):
    saved = save(agent, project)
    assert (saved["agentId"], saved["userId"], saved["title"], saved["messageCount"]) == (
        "support-bot",
        "user-42",
        "Login trouble",
        2,
    )
    assert [(m["position"], m["role"]) for m in saved["messages"]] == [
        (0, "user"),
        (1, "assistant"),
    ]
    assert saved["messages"][1]["sentAt"] == "2031-03-01T12:00:00Z"
    read = agent.get(url(project, "conversations", saved["id"]))
    assert read.status_code == 200
    assert read.json() == {**saved, "lastMessageAt": read.json()["lastMessageAt"]}


def test_append_then_page_through_the_messages(agent, project):
    saved = save(agent, project)
    response = agent.post(
        url(project, "conversations", saved["id"], "messages"),
        {"messages": [{"role": "user", "content": "Danke!"}, {"role": "tool", "content": "ok"}]},
        format="json",
    )
    assert response.status_code == 201
    body = response.json()
    assert body["conversation"]["messageCount"] == 4
    assert [(m["position"], m["content"]) for m in body["messages"]] == [(2, "Danke!"), (3, "ok")]
    assert response["Location"].endswith(f"/conversations/{saved['id']}")
    first = agent.get(url(project, "conversations", saved["id"]), {"limit": 3}).json()
    assert ([m["position"] for m in first["messages"]], first["nextAfter"]) == ([0, 1, 2], 2)
    rest = agent.get(url(project, "conversations", saved["id"]), {"after": 2}).json()
    assert ([m["position"] for m in rest["messages"]], rest["nextAfter"]) == ([3], None)


def test_a_users_conversations_newest_first_by_pages(agent, project):
    made = [save(agent, project)["id"] for _ in range(3)]
    save(agent, project, {**CHAT, "userId": "someone-else"})
    first = agent.get(url(project, "conversations"), {"userId": "user-42", "limit": 2}).json()
    assert [c["id"] for c in first["conversations"]] == [made[2], made[1]]
    assert first["next"]
    second = agent.get(first["next"]).json()
    assert ([c["id"] for c in second["conversations"]], second["next"]) == ([made[0]], None)


def test_search_gives_each_hit_with_its_matching_messages(agent, project):
    found = save(
        agent,
        project,
        {**CHAT, "messages": [{"role": "user", "content": "The invoice export times out"}]},
    )
    save(agent, project)
    response = agent.get(
        url(project, "conversations"), {"q": "invoice export", "userId": "user-42"}
    )
    assert response.status_code == 200
    (hit,) = [c for c in response.json()["conversations"] if c["id"] == found["id"]]
    assert hit["score"] > 0
    assert hit["matches"][0]["content"] == "The invoice export times out"
    assert {"score", "words", "meaning", "position", "role", "sentAt"} <= set(hit["matches"][0])
    assert response.json()["conversations"][0]["id"] == found["id"]


def test_distill_proposes_pending_inactive_learnings(agent, project):
    saved = save(agent, project)
    response = agent.post(url(project, "conversations", saved["id"], "distill"))
    assert response.status_code == 201
    (memory,) = response.json()["memories"]
    assert memory["content"] == "Always answer in German, please."
    assert (memory["type"], memory["reviewStatus"], memory["active"]) == (
        "learning",
        "pending",
        False,
    )
    given = agent.post(
        url(project, "conversations", saved["id"], "distill"),
        {
            "learnings": [
                "Login problems are usually the SSO cookie.",
                "Always answer in German, please.",
            ]
        },
        format="json",
    )
    assert given.status_code == 201
    assert [m["content"] for m in given.json()["memories"]] == [
        "Login problems are usually the SSO cookie."
    ]
    assert given.json()["known"] == ["Always answer in German, please."]
    assert (
        Memory.objects.filter(project=project, active=False, review_status="pending").count() == 2
    )


@pytest.mark.parametrize(
    ("body", "field", "says"),
    [
        ({**CHAT, "userId": "user 42"}, "userId", "letters, digits"),
        ({**CHAT, "agentId": "a" * 201}, "agentId", "no more than 200"),
        ({**CHAT, "messages": []}, "messages", "at least 1"),
        ({**CHAT, "messages": [{"role": "user", "content": "x"}] * 101}, "messages", "100"),
        ({**CHAT, "messages": [{"role": "bot", "content": "x"}]}, "messages[0].role", "not one of"),
        (
            {**CHAT, "messages": [{"role": "user", "content": "x" * 8001}]},
            "messages[0].content",
            "8000",
        ),
        (
            {**CHAT, "messages": [{"role": "user", "content": "x", "sentAt": "yesterday"}]},
            "messages[0].sentAt",
            "ISO 8601",
        ),
        (
            {**CHAT, "messages": [{"role": "user", "content": "x", "time": "now"}]},
            "messages[0].time",
            "Unknown field",
        ),
        ({**CHAT, "colour": "red"}, "colour", "Unknown field"),
    ],
)
def test_bad_input_is_a_400_that_says_what_to_fix(agent, project, body, field, says):
    response = agent.post(url(project, "conversations"), body, format="json")
    assert response.status_code == 400
    error = response.json()["error"]
    assert says in " ".join(error["fields"][field]), error
    assert not Conversation.objects.exists()


def test_a_secret_in_a_message_is_refused_with_where_it_is(agent, project):
    secret = "deploy with ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
    body = {**CHAT, "messages": [*CHAT["messages"], {"role": "user", "content": secret}]}
    response = agent.post(url(project, "conversations"), body, format="json")
    assert response.status_code == 400
    assert "GitHub Token at line 1" in " ".join(
        response.json()["error"]["fields"]["messages[2].content"]
    )
    saved = save(agent, project)
    appended = agent.post(
        url(project, "conversations", saved["id"], "messages"),
        {"messages": [{"role": "user", "content": secret}]},
        format="json",
    )
    assert appended.status_code == 400
    assert Message.objects.count() == 2


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ({"userId": "a b"}, "userId"),
        ({"limit": "0"}, "limit"),
        ({"cursor": "nonsense"}, "cursor"),
        ({"page": "2"}, "page"),
        ({"q": "x" * 501}, "q"),
    ],
)
def test_bad_list_parameters_are_a_400(agent, project, query, field):
    response = agent.get(url(project, "conversations"), query)
    assert response.status_code == 400
    assert field in response.json()["error"]["fields"]


def test_another_projects_key_gets_404_everywhere(agent, project, other_project):
    saved = save(agent, project)
    other = client_with_key(other_project)
    conversation = url(project, "conversations", saved["id"])
    assert other.get(url(project, "conversations")).status_code == 404
    assert other.post(url(project, "conversations"), CHAT, format="json").status_code == 404
    assert other.get(conversation).status_code == 404
    assert (
        other.post(
            f"{conversation}/messages", {"messages": CHAT["messages"]}, format="json"
        ).status_code
        == 404
    )
    assert other.post(f"{conversation}/distill").status_code == 404
    # Its own project's URLs with this project's conversation id: not found either.
    theirs = url(other_project, "conversations", saved["id"])
    assert other.get(theirs).status_code == 404
    assert (
        other.post(f"{theirs}/messages", {"messages": CHAT["messages"]}, format="json").status_code
        == 404
    )
    assert other.post(f"{theirs}/distill").status_code == 404
    assert (
        other.get(url(other_project, "conversations"), {"q": "log in"}).json()["conversations"]
        == []
    )
    assert Message.objects.count() == 2


def test_a_viewer_reads_and_a_reviewer_writes(agent, project):
    saved = save(agent, project)
    viewer, reviewer = UserFactory(), UserFactory()
    Membership.objects.create(user=viewer, project=project, role=Role.VIEWER)
    Membership.objects.create(user=reviewer, project=project, role=Role.REVIEWER)
    as_viewer, as_reviewer = APIClient(), APIClient()
    as_viewer.force_authenticate(viewer)
    as_reviewer.force_authenticate(reviewer)
    assert as_viewer.get(url(project, "conversations", saved["id"])).status_code == 200
    refused = as_viewer.post(url(project, "conversations"), CHAT, format="json")
    assert refused.status_code == 403
    assert "reviewer role" in refused.json()["error"]["message"]
    assert as_viewer.post(url(project, "conversations", saved["id"], "distill")).status_code == 403
    assert as_reviewer.post(url(project, "conversations"), CHAT, format="json").status_code == 201


def test_query_counts(agent, project, django_assert_num_queries):
    saved = save(agent, project)
    for _ in range(3):
        save(agent, project)
    conversation = url(project, "conversations", saved["id"])
    # the key, the slot taken, the conversation, its messages, the slot given back
    with django_assert_num_queries(5):
        assert agent.get(conversation).status_code == 200
    # the key, the slot; the conversation, its messages (savepoints around them); the slot
    with django_assert_num_queries(7):
        assert agent.post(url(project, "conversations"), CHAT, format="json").status_code == 201
    # the key, the slot; in a savepoint: the lock, the next position, the messages, the
    # count; the slot given back
    with django_assert_num_queries(9):
        appended = agent.post(
            f"{conversation}/messages", {"messages": CHAT["messages"]}, format="json"
        )
        assert appended.status_code == 201
    # the key, the slot, one page of the user's conversations, the slot given back
    with django_assert_num_queries(4):
        assert agent.get(url(project, "conversations"), {"userId": "user-42"}).status_code == 200
    # the key, the slot, words, meaning, the conversations, their messages, the slot
    with django_assert_num_queries(7):
        assert agent.get(url(project, "conversations"), {"q": "log in"}).status_code == 200


def test_query_count_of_a_distillation(
    agent, project, django_assert_num_queries, django_assert_max_num_queries
):
    saved = save(agent, project)
    distill = url(project, "conversations", saved["id"], "distill")
    agent.post(distill)  # proposes "Always answer in German, please."
    # One proposal: the key, the slot, the conversation, the known texts asked once, the
    # store's write of a new memory (its history, embedding, repeats and entities), the hold
    # until review (locked, updated, its history), the slot given back. At most: the store's
    # readers keep some of what they read per process (23 when warm).
    with django_assert_max_num_queries(26):
        one = agent.post(distill, {"learnings": ["Rotate the logs weekly."]}, format="json")
    assert one.status_code == 201
    for _ in range(5):
        agent.post(
            url(project, "conversations", saved["id"], "messages"),
            {"messages": [{"role": "user", "content": "Thanks."}] * 50},
            format="json",
        )
    # Nothing new in 252 user messages: the key, the slot, the conversation; in a savepoint
    # its user messages at once and the known texts; the slot given back.
    with django_assert_num_queries(8):
        known = agent.post(distill)
    assert (known.json()["memories"], known.json()["known"]) == (
        [],
        ["Always answer in German, please."],
    )
