"""Bad input: a 400 in one shape that says what to fix, and nothing stored. Never a 500."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from memories.models import Memory
from tests.api.conftest import url

pytestmark = pytest.mark.django_db

VALID = {"type": "warning", "content": "A real memory."}


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"surprise": 1}, "surprise"),
        ({"type": 3}, "type"),
        ({"type": "rumour"}, "type"),
        ({"source": "oracle"}, "source"),
        ({"content": ""}, "content"),
        ({"content": "   "}, "content"),
        ({"content": 42}, "content"),
        ({"content": "x" * 4001}, "content"),
        ({"relevanceScore": 1.01}, "relevanceScore"),
        ({"relevanceScore": -0.5}, "relevanceScore"),
        ({"relevanceScore": "0.5"}, "relevanceScore"),
        ({"relevanceScore": True}, "relevanceScore"),
        ({"tags": "src/**"}, "tags"),
        ({"tags": [1]}, "tags[0]"),
        ({"tags": [""]}, "tags[0]"),
        ({"tags": ["x" * 201]}, "tags[0]"),
        ({"tags": [f"t{i}" for i in range(21)]}, "tags"),
        ({"expiresAt": "tomorrow"}, "expiresAt"),
        ({"expiresAt": "2030-01-01"}, "expiresAt"),
        ({"expiresAt": "2030-01-01T00:00:00"}, "expiresAt"),
        ({"expiresAt": 1893456000}, "expiresAt"),
        ({"sourceRunId": "1"}, "sourceRunId"),
        ({"sourceRunId": 10**30}, "sourceRunId"),
        ({"sourceRunId": 999}, "sourceRunId"),
        ({"scope": "global"}, "scope"),
        ({"scope": "run"}, "sourceRun"),
    ],
)
def test_each_bad_field_is_a_400_naming_it(agent, project, change, field):
    response = agent.post(url(project, "memories"), {**VALID, **change}, format="json")
    assert response.status_code == 400, response.content
    error = response.json()["error"]
    assert error["code"] == "invalid"
    assert field in error["fields"], error
    assert field in error["message"]
    assert not Memory.objects.exists()


def test_all_errors_are_reported_at_once(agent, project):
    body = {"type": "nope", "content": "", "extra": True}
    fields = agent.post(url(project, "memories"), body, format="json").json()["error"]["fields"]
    assert set(fields) == {"type", "content", "extra"}


def test_a_source_run_of_another_project_is_a_400(agent, project, other_project, make_run):
    foreign = make_run(project=other_project)
    response = agent.post(
        url(project, "memories"), {**VALID, "sourceRunId": foreign.pk}, format="json"
    )
    assert response.status_code == 400
    assert "sourceRunId" in response.json()["error"]["fields"]
    assert not Memory.objects.exists()


@pytest.mark.parametrize(
    ("raw", "content_type", "status", "code"),
    [
        (
            b'{"type": "warning", "content": "x", "relevanceScore": NaN}',
            "application/json",
            400,
            "malformed_request",
        ),
        (
            b'{"type": "warning", "content": "x", "relevanceScore": Infinity}',
            "application/json",
            400,
            "malformed_request",
        ),
        (b'{"type": "warning",', "application/json", 400, "malformed_request"),
        (b"\xff\xfe", "application/json", 400, "malformed_request"),
        (b"[1, 2]", "application/json", 400, "invalid"),
        (b'"just a string"', "application/json", 400, "invalid"),
        (b"null", "application/json", 400, "invalid"),
        (b"type=warning", "application/x-www-form-urlencoded", 415, "unsupported_media_type"),
        (
            b'{"relevanceScore": 1e400, "type": "warning", "content": "x"}',
            "application/json",
            400,
            "invalid",
        ),
    ],
)
def test_malformed_bodies(agent, project, raw, content_type, status, code):
    response = agent.generic("POST", url(project, "memories"), raw, content_type)
    assert response.status_code == status, response.content
    assert response.json()["error"]["code"] == code
    assert not Memory.objects.exists()


def test_oversized_body_is_a_413(agent, project, settings):
    settings.API_MAX_BODY_BYTES = 1000
    body = {**VALID, "content": "x" * 2000}
    response = agent.post(url(project, "memories"), body, format="json")
    assert response.status_code == 413
    assert response.json()["error"]["code"] == "too_large"


@pytest.mark.parametrize(
    "query",
    [
        "type=rumour",
        "active=perhaps",
        "source=oracle",
        "reviewStatus=maybe",
        "expiringBefore=soon",
        "limit=0",
        "limit=-3",
        "limit=ten",
        "ordering=content",
        "cursor=garbage",
    ],
)
def test_bad_query_parameters_are_a_400(agent, project, query):
    response = agent.get(url(project, "memories") + "?" + query)
    assert response.status_code == 400, response.content
    assert response.json()["error"]["code"] == "invalid"


def test_unknown_api_path_answers_in_the_error_shape(agent):
    response = agent.get("/api/nothing/here")
    assert response.status_code == 404
    assert response.json()["error"]["code"] == "not_found"


def test_wrong_method_is_a_405_in_the_error_shape(agent, project):
    response = agent.put(url(project, "memories"), VALID, format="json")
    assert response.status_code == 405
    assert response.json()["error"]["code"] == "method_not_allowed"


def test_huge_ids_in_paths_are_404_not_500(agent, project):
    assert agent.get(url(project, "memories", 10**17)).status_code == 404
    assert agent.get(url(project, "memories", 10**30)).status_code == 404
    assert APIClient().get("/api/projects/").status_code == 401


# Found by schemathesis against the live server: each once answered 500 or HTML.


def test_offsets_postgresql_cannot_store_are_normalised_to_utc(agent, project, make_memory):
    make_memory(project=project, type="context")
    response = agent.get(
        url(project, "memories"), {"expiringBefore": "2103-10-22T05:08:30.4-17:07"}
    )
    assert response.status_code == 200
    assert len(response.json()["memories"]) == 1
    created = agent.post(
        url(project, "memories"),
        {**VALID, "expiresAt": "2030-01-01T00:00:00-17:30"},
        format="json",
    )
    assert created.status_code == 201
    assert created.json()["expiresAt"] == "2030-01-01T17:30:00Z"


def test_a_date_that_leaves_the_calendar_in_utc_is_a_400(agent, project):
    response = agent.post(
        url(project, "memories"), {**VALID, "expiresAt": "0001-01-01T00:00:00+10:00"}, format="json"
    )
    assert response.status_code == 400
    assert "expiresAt" in response.json()["error"]["fields"]


def test_a_denormal_relevance_score_is_stored_as_zero(agent, project):
    response = agent.post(
        url(project, "memories"), {**VALID, "relevanceScore": 5e-324}, format="json"
    )
    assert response.status_code == 201
    assert response.json()["relevanceScore"] == 0.0


def test_unknown_paths_answer_json_for_every_method(agent):
    for method, path in [
        ("get", "/api/projects/x/memories/null,null"),
        ("post", "/api/projects/x/memories/null,null"),
        ("patch", "/api/projects/demo/memories/\nM"),
        ("delete", "/api/projects/x/memories/null,null"),
    ]:
        response = getattr(agent, method)(path)
        assert response.status_code == 404
        assert response.json()["error"]["code"] == "not_found"


@pytest.mark.parametrize("key", ["has space", "x" * 201, "tab\tkey", "ключ"])
def test_bad_idempotency_keys_are_a_400(agent, project, key):
    response = agent.post(url(project, "memories"), VALID, format="json", HTTP_IDEMPOTENCY_KEY=key)
    assert response.status_code == 400
    assert "Idempotency-Key" in response.json()["error"]["fields"]


def test_created_resources_have_a_location(agent, project):
    memory = agent.post(url(project, "memories"), VALID, format="json")
    assert memory["Location"] == f"/api/projects/{project.slug}/memories/{memory.json()['id']}"
    assert agent.get(memory["Location"]).status_code == 200
    run = agent.post(url(project, "runs"), {"externalId": "r-9"}, format="json")
    detail = agent.get(run["Location"]).json()
    assert (detail["externalId"], detail["given"]) == ("r-9", [])
    shared = agent.post("/api/memories/global", VALID, format="json")
    assert agent.get(shared["Location"]).json()["scope"] == "global"


def test_nul_and_control_characters_are_stripped_everywhere(agent, project):
    run = agent.post(
        url(project, "runs"), {"externalId": "r\x00-1\x07", "taskTitle": "t\x00"}, format="json"
    )
    assert run.status_code == 201
    assert (run.json()["externalId"], run.json()["taskTitle"]) == ("r-1", "t")
    memory = agent.post(url(project, "memories"), {**VALID, "tags": ["a\x00b"]}, format="json")
    assert memory.json()["tags"] == ["ab"]
    blank = agent.post(url(project, "memories"), {**VALID, "content": "\x00\x1c"}, format="json")
    assert blank.status_code == 400


def test_a_reason_may_be_blank(agent, reviewer_client, project, make_memory):
    memory = make_memory(project=project)
    response = reviewer_client.patch(
        url(project, "memories", memory.pk, "reject"), {"reason": "\x1c"}, format="json"
    )
    assert response.status_code == 200


@pytest.mark.parametrize(("path", "field"), [("memories", "tags"), ("context", "writeScope")])
def test_json_nested_too_deeply_is_a_400(agent, project, path, field):
    deep = "[" * 1000 + "]" * 1000
    body = f'{{"type": "warning", "content": "x", "tokenBudget": 100, "{field}": {deep}}}'
    response = agent.post(url(project, path), body, content_type="application/json")
    assert response.status_code == 400, response.content
    assert "nested" in response.json()["error"]["message"]
    assert not Memory.objects.exists()


def cursor(order: str, position: object) -> str:
    """A cursor made by hand in the API's own format."""
    import base64
    import json

    text = json.dumps({"o": order, "p": position})
    return base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")


BY_NEWEST = "-created_at,-id"


@pytest.mark.parametrize(
    ("path", "made"),
    [
        ("memories", cursor(BY_NEWEST, ["notadate", 1])),
        ("memories", cursor(BY_NEWEST, ["2026-13-45T99:00:00Z", 1])),
        ("memories", cursor(BY_NEWEST, ["2026-01-01T00:00:00", 1])),  # no time zone
        ("memories", cursor(BY_NEWEST, ["2026-01-01T00:00:00Z"])),  # a key short
        ("memories", cursor(BY_NEWEST, ["2026-01-01T00:00:00Z", "x"])),
        ("memories", cursor(BY_NEWEST, [None, 1])),  # a creation time is never empty
        ("memories", cursor(BY_NEWEST, ["2026-01-01T00:00:00Z", 99999999999999999999999])),
        ("memories", cursor(BY_NEWEST, {"created_at": 1})),
        ("memories", "cD1ub3RhbnVtYmVy"),  # base64 of another format's "p=notanumber"
        ("memories", "!!!"),
        ("memories?ordering=confidence", cursor("confidence,id", ["notanumber", 1])),
        ("memories?ordering=confidence", cursor("confidence,id", [1e400, 1])),
        ("memories?ordering=confidence", cursor("confidence,id", [True, 1])),
        ("memories?ordering=expiresAt", cursor("expires_at,id", [12, 1])),
        # Values the checks above let through but the database could not read.
        ("memories", cursor(BY_NEWEST, ["2024-01-01T00:00:00+00:00", float("inf")])),
        ("memories", cursor(BY_NEWEST, ["9999-12-31T23:59:59-23:59", 1])),
        ("memories", cursor(BY_NEWEST, ["0001-01-01T00:00:00+23:59", 1])),
        ("memories?ordering=confidence", cursor("confidence,id", [10**400, 1])),
        ("entities", cursor("key,id", ["a\u0000b", 1])),
        ("entities", cursor("key,id", ["a", float("inf")])),
    ],
)
def test_a_hand_made_cursor_with_a_bad_position_is_a_400(agent, project, make_memory, path, made):
    make_memory(project=project)
    separator = "&" if "?" in path else "?"
    response = agent.get(url(project, path) + f"{separator}cursor={made}")
    assert response.status_code == 400, response.content
    assert response.json()["error"]["fields"] == {
        "cursor": ["Invalid cursor: use the `next` URL as given."]
    }


@pytest.mark.parametrize(
    "path",
    ["memories?limit=%C2%B2", "memories?limit=%D9%A5", "memories?limit=%EF%BC%95"],
)
def test_digits_of_other_scripts_are_not_numbers(agent, project, path):
    response = agent.get(url(project, path))
    assert response.status_code == 400, response.content
    assert "limit" in response.json()["error"]["fields"]


def test_a_project_named_by_a_superscript_is_not_found(agent):
    assert agent.get("/api/projects/%C2%B2").status_code == 404


def test_a_naive_date_in_a_filter_is_refused_like_in_a_body(agent, project):
    response = agent.get(url(project, "memories?expiringBefore=2030-01-01T00:00:00"))
    assert response.status_code == 400, response.content
    assert "time zone" in response.json()["error"]["fields"]["expiringBefore"][0]
    aware = agent.get(url(project, "memories?expiringBefore=2030-01-01T00:00:00Z"))
    assert aware.status_code == 200


def test_a_share_range_upside_down_is_refused(agent, project):
    response = agent.post(
        url(project, "context"),
        {"tokenBudget": 100, "shares": {"global": {"min": 0.9, "max": 0.1}}},
        format="json",
    )
    assert response.status_code == 400, response.content
    assert "min must not be greater than max" in response.content.decode()


def test_a_cursor_of_another_order_says_so(agent, project, make_memory):
    make_memory(project=project)
    made = cursor(BY_NEWEST, ["2026-01-01T00:00:00Z", 1])
    response = agent.get(url(project, f"memories?ordering=confidence&cursor={made}"))
    assert response.status_code == 400, response.content
    assert "another order" in response.json()["error"]["fields"]["cursor"][0]


@pytest.mark.parametrize(
    ("ordering", "hint"),
    [
        ("accessCount", "no longer a sort order"),
        ("-relevanceScore", "no longer a sort order"),
        ("confidence,-createdAt", "one field"),
        ("content", "not sortable"),
    ],
)
def test_an_order_no_index_keeps_is_refused_with_the_ones_there_are(agent, project, ordering, hint):
    response = agent.get(url(project, f"memories?ordering={ordering}"))
    assert response.status_code == 400, response.content
    message = response.json()["error"]["fields"]["ordering"][0]
    assert hint in message
    assert "createdAt, updatedAt, confidence, expiresAt" in message


def test_a_limit_of_thousands_of_digits_is_the_cap(agent, project, make_memory):
    make_memory(project=project)
    response = agent.get(url(project, "memories?limit=" + "9" * 5000))
    assert response.status_code == 200, response.content
