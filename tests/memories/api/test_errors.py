"""Bad input: a 400 in one shape that says what to fix, and nothing stored. Never a 500."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from memories.models import Memory
from tests.memories.api.conftest import url

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
