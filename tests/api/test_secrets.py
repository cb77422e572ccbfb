"""Secrets in what agents write: found, rejected with where they are, or redacted and recorded."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError

from memories import services
from memories.models import Memory, MemoryEvent
from memories.secrets import SecretsPolicy, redact, scan, scrub
from memories.tokens import count_tokens
from tests.api.conftest import url

# Made-up values in the shapes providers issue (none is a live credential).
GITHUB = "ghp_Xb7kQ2mP9wR4tY6uI8oL1zC3vN5aS0dF7gH2"
AWS = "AKIAIOSFODNN7EXAMPLE"
PRIVATE_KEY = (
    "-----BEGIN RSA PRIVATE KEY-----\n"
    "MIIEpAIBAAKCAQEA1c7+9z5Pad7OejecsQ0bu3aozN3tihPmljnnudb9G3HECdnH\n"
    "-----END RSA PRIVATE KEY-----"
)


@pytest.mark.parametrize(
    ("text", "kind", "secret"),
    [
        (f"Use the key {AWS} for the bucket", "AWS Access Key", AWS),
        (f"export GITHUB_TOKEN={GITHUB}", "GitHub Token", GITHUB),
        ("connect to postgres://admin:s3cr3tPa55@db.internal:5432/app", None, "s3cr3tPa55"),
        ('password = "hunter2hunter2"', "Secret Keyword", "hunter2hunter2"),
        ("DB_PASSWORD=Tr0ub4dor3xq", "Secret Assignment", "Tr0ub4dor3xq"),
        ("api_key: 9f8e7d6c5b4a39281706f5e4d3c2b1a0", None, "9f8e7d6c5b4a39281706f5e4d3c2b1a0"),
        ("sk-proj-Xb7kQ2mP9wR4tY6uI8oL1zC3vN5aS0dF7gH2aa is the key", "OpenAI Key", None),
        ("xoxb-1234567890-1234567890123-Xb7kQ2mP9wR4tY6uI8oL1zC3", "Slack Token", None),
        ("ml_1a2b3c4d_Xb7kQ2mP9wR4tY6uI8oL1zC3vN5aS0dF7gH2", "Memory Layer API Key", None),
    ],
)
def test_each_kind_of_secret_is_found_and_redacted_whole(text, kind, secret):
    findings = scan(text, "content")
    assert len(findings) == 1, findings
    if kind:
        assert findings[0].kind == kind
    redacted = redact(text, findings)
    assert "[REDACTED " in redacted
    if secret:
        assert secret not in redacted
        assert findings[0].column == text.index(secret) + 1


@pytest.mark.parametrize(
    "text",
    [
        "The password reset flow sends an email; token refresh happens every hour.",
        "db_password=get_password()",
        "password = ${DB_PASSWORD}",
        'SECRET_KEY=os.environ["SECRET_KEY"]',
        "AUTH_TOKEN: <your token here>",
        "token_type=bearer_token_v2",
        "Run migrations with python manage.py migrate before the tests.",
        "Keep the API key in the vault, under payments/stripe.",
    ],
)
def test_ordinary_text_about_secrets_is_not_a_secret(text):
    assert scan(text, "content") == []


def test_a_private_key_is_redacted_from_its_begin_line_to_its_end_line():
    text = f"The deploy key:\n{PRIVATE_KEY}\nrotate it yearly."
    findings = scan(text, "content")
    assert [(f.kind, f.line, f.column) for f in findings] == [("Private Key", 2, 1)]
    assert redact(text, findings) == "The deploy key:\n[REDACTED Private Key]\nrotate it yearly."


def test_reject_names_every_field_and_place_and_never_the_secret():
    with pytest.raises(ValidationError) as raised:
        scrub({"content": f"line one\nkey {AWS}", "tags": ["ok", GITHUB]}, SecretsPolicy.REJECT)
    errors = raised.value.message_dict
    assert "AWS Access Key at line 2, column 5" in errors["content"][0]
    assert "tags[1]: GitHub Token at line 1, column 1" in errors["tags"][0]
    assert AWS not in str(errors)
    assert GITHUB not in str(errors)


# --- through the services and the API --------------------------------------------------------


def _create(client, project, **body):
    payload = {"type": "learning", "content": "plain", **body}
    return client.post(url(project, "memories"), payload, format="json")


@pytest.mark.django_db
def test_api_rejects_a_secret_with_a_400_that_says_where_and_stores_nothing(agent, project):
    response = _create(agent, project, content=f"Deploy with {GITHUB} from CI", tags=["ci"])
    assert response.status_code == 400
    body = response.json()
    assert body["error"]["code"] == "invalid"
    assert "GitHub Token at line 1, column 13" in body["error"]["fields"]["content"][0]
    assert GITHUB not in response.content.decode()
    assert not Memory.objects.filter(project=project).exists()


@pytest.mark.django_db
def test_api_redacts_by_project_policy_and_records_the_redaction(agent, project):
    project.policy.secrets = SecretsPolicy.REDACT
    project.policy.save()
    response = _create(
        agent, project, content=f"The staging bucket takes {AWS}.", tags=["infra", GITHUB]
    )
    assert response.status_code == 201, response.json()
    memory = Memory.objects.get(pk=response.json()["id"])
    assert memory.content == "The staging bucket takes [REDACTED AWS Access Key]."
    assert memory.tags == ["infra", "[REDACTED GitHub Token]"]
    assert AWS not in memory.summary
    assert memory.token_count == count_tokens(memory.content)
    event = MemoryEvent.objects.get(memory=memory)
    assert "content: AWS Access Key at line 1, column 26" in event.reason
    assert "tags[1]: GitHub Token" in event.reason
    assert AWS not in str(event.changes)
    assert GITHUB not in str(event.changes)
    assert response.json()["tags"] == ["infra", "[REDACTED GitHub Token]"]


@pytest.mark.django_db
def test_an_update_is_scanned_too(agent, project, make_memory):
    memory = make_memory(project=project, content="before")
    response = agent.patch(
        url(project, "memories", memory.pk), {"content": "DB_PASSWORD=Tr0ub4dor3xq"}, format="json"
    )
    assert response.status_code == 400
    memory.refresh_from_db()
    assert memory.content == "before"

    project.policy.secrets = SecretsPolicy.REDACT
    project.policy.save()
    response = agent.patch(
        url(project, "memories", memory.pk),
        {"content": "DB_PASSWORD=Tr0ub4dor3xq", "reason": "new setting"},
        format="json",
    )
    assert response.status_code == 200, response.json()
    memory.refresh_from_db()
    assert memory.content == "DB_PASSWORD=[REDACTED Secret Assignment]"
    event = memory.events.order_by("-id").first()
    assert event.reason.startswith("new setting Secrets redacted before storage")


@pytest.mark.django_db
def test_a_global_memory_with_a_secret_is_always_rejected(system_actor):
    with pytest.raises(ValidationError):
        services.memory_create(
            project=None, type="pattern", content=f"use {AWS}", source="human", actor=system_actor
        )


@pytest.mark.django_db
def test_the_project_api_shows_the_secrets_policy(agent, project):
    body = agent.get(f"/api/projects/{project.slug}").json()
    assert body["policy"]["secrets"] == "reject"


# --- what slipped through before: prefixes, invisible characters, chained names, headers --

AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        (f"secret: aws_secret_access_key = {AWS_SECRET}", AWS_SECRET),
        ("AKIA\u00adIOSFODNN7EXAMPLE is the id", "AKIAIOSFODNN7EXAMPLE"),
        (f"{GITHUB[:10]}\u200b{GITHUB[10:]} works", GITHUB),
        (f"{GITHUB[:10]}\u202e{GITHUB[10:]} works", GITHUB),
        ("Authorization: Basic YWRtaW46c3VwZXJzZWNyZXQ=", "YWRtaW46c3VwZXJzZWNyZXQ="),
        ("password: db_password: Sup3rS3cretPw77", "Sup3rS3cretPw77"),
        ("".join(chr(ord(c) + 0xFEE0) for c in "AKIAIOSFODNN7EXAMPLE") + " in full width", AWS),
    ],
)
def test_secrets_are_found_in_the_text_a_person_would_read(text, secret):
    with pytest.raises(ValidationError):
        scrub({"content": text}, SecretsPolicy.REJECT)
    stored = scrub({"content": text}, SecretsPolicy.REDACT).values["content"]
    assert "[REDACTED " in stored
    assert secret not in stored
    visible = "".join(ch for ch in stored if ch.isprintable())
    assert secret not in visible.replace("\u00ad", "")


def test_content_of_invisible_characters_only_is_empty(agent, project):
    response = agent.post(
        url(project, "memories"),
        {"type": "pattern", "content": "\u200b\u00ad\u2060"},
        format="json",
    )
    assert response.status_code == 400
    assert "content" in response.json()["error"]["fields"]


@pytest.mark.parametrize(
    ("path", "body", "field"),
    [
        ("runs", {"externalId": "r1", "taskTitle": f"Deploy with {GITHUB}"}, "taskTitle"),
        ("runs", {"externalId": f"job-{AWS}"}, "externalId"),
        ("runs", {"externalId": "r1", "writeScope": [f"src/{GITHUB}.py"]}, "writeScope"),
        ("changes", {"paths": ["src/a.py"], "ref": f"deploy {GITHUB}"}, "ref"),
        ("changes", {"paths": [f"src/{AWS}.py"], "ref": "abc"}, "paths"),
    ],
)
@pytest.mark.django_db
def test_every_stored_free_text_field_is_scanned(agent, project, path, body, field):
    response = agent.post(url(project, path), body, format="json")
    assert response.status_code == 400, response.content
    assert field in response.json()["error"]["fields"]
    assert "Looks like a secret" in response.json()["error"]["fields"][field][0]


@pytest.mark.django_db
def test_an_idempotency_key_that_is_a_secret_is_refused(agent, project):
    response = agent.post(
        url(project, "memories"),
        {"type": "pattern", "content": "Fine."},
        format="json",
        HTTP_IDEMPOTENCY_KEY=GITHUB,
    )
    assert response.status_code == 400
    assert "Idempotency-Key" in response.json()["error"]["message"]
    assert not Memory.objects.exists()


@pytest.mark.django_db
def test_a_reason_is_scanned(agent, project, make_memory):
    memory = make_memory(project=project, content="Fine.")
    response = agent.patch(
        url(project, f"memories/{memory.pk}"),
        {"content": "Better.", "reason": f"token {GITHUB}"},
        format="json",
    )
    assert response.status_code == 400, response.content
    assert "reason" in response.json()["error"]["fields"]
    assert not MemoryEvent.objects.filter(reason__contains=GITHUB).exists()
