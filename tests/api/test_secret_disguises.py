"""Secrets in every disguise, in every text a client writes.

Each disguise (characters nobody sees, letters of another script that look Latin, a token
split by one space) in each free-text field of the API is refused with a 400 that names the
field and the kind of secret and never the secret, and nothing is stored. Ordinary text in
other scripts is stored exactly as written."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
from rest_framework.test import APIClient

from knowledge.models import MemoryPair
from memories.models import IdempotencyRecord, Memory, MemoryEvent, Run, Scope
from tests.api.conftest import client_with_key, url
from tests.factories import MemoryFactory

pytestmark = pytest.mark.django_db

# Made-up values in the shapes providers issue (none is a live credential).
GITHUB = "ghp_Xb7kQ2mP9wR4tY6uI8oL1zC3vN5aS0dF7gH2"
AWS = "AKIAIOSFODNN7EXAMPLE"
GITHUB_KIND, AWS_KIND, OWN_KIND = "GitHub Token", "AWS Access Key", "Memory Layer API Key"


def inside(token: str, char: str, at: int = 10) -> str:
    return token[:at] + char + token[at:]


# Characters a reader does not see: format characters and default-ignorable code points.
INVISIBLE = {
    "U+200B zero width space": "\u200b",
    "U+200C zero width non-joiner": "\u200c",
    "U+200D zero width joiner": "\u200d",
    "U+2060 word joiner": "\u2060",
    "U+FEFF zero width no-break space": "\ufeff",
    "U+00AD soft hyphen": "\u00ad",
    "U+180E Mongolian vowel separator": "\u180e",
    "U+FE0F variation selector-16": "\ufe0f",
    "U+FE00 variation selector-1": "\ufe00",
    "U+E0101 variation selector-18": "\U000e0101",
    "U+034F combining grapheme joiner": "\u034f",
    "U+115F Hangul choseong filler": "\u115f",
    "U+3164 Hangul filler": "\u3164",
    "U+FFA0 halfwidth Hangul filler": "\uffa0",
    "U+17B4 Khmer vowel inherent aq": "\u17b4",
    "U+202E right-to-left override": "\u202e",
    "U+2066 left-to-right isolate": "\u2066",
    "U+061C Arabic letter mark": "\u061c",
    "U+E0020 tag space": "\U000e0020",
    "U+1D173 musical symbol begin beam": "\U0001d173",
}

# name -> (the kind the error names, the disguised secret made from the project's own key)
DISGUISES: dict[str, tuple[str, Callable[[str], str]]] = {
    **{
        f"GitHub token split by {name}": (GITHUB_KIND, lambda _, c=char: inside(GITHUB, c))
        for name, char in INVISIBLE.items()
    },
    "GitHub token split by three invisible characters": (
        GITHUB_KIND,
        lambda _: inside(inside(inside(GITHUB, "\u200b", 6), "\ufe0f", 12), "\u2063", 20),
    ),
    "Cyrillic \u0440 in ghp_": (GITHUB_KIND, lambda _: GITHUB.replace("p", "\u0440", 1)),
    "Cyrillic \u04bb in ghp_": (GITHUB_KIND, lambda _: GITHUB.replace("h", "\u04bb", 1)),
    "Cyrillic \u043e and Greek \u03bd inside a GitHub token": (
        GITHUB_KIND,
        lambda _: GITHUB.replace("o", "\u043e").replace("v", "\u03bd"),
    ),
    "Cyrillic \u0410 in AKIA": (AWS_KIND, lambda _: "\u0410" + AWS[1:]),
    "Cyrillic \u0406 in AKIA": (AWS_KIND, lambda _: AWS.replace("I", "\u0406", 1)),
    "Greek \u039a in AKIA": (AWS_KIND, lambda _: AWS.replace("K", "\u039a", 1)),
    "full-width AWS key": (AWS_KIND, lambda _: "".join(chr(ord(c) + 0xFEE0) for c in AWS)),
    "AWS key split by a space": (AWS_KIND, lambda _: AWS[:8] + " " + AWS[8:]),
    "AWS key split by a no-break space": (AWS_KIND, lambda _: AWS[:8] + "\u00a0" + AWS[8:]),
    "GitHub token split by a space": (GITHUB_KIND, lambda _: GITHUB[:17] + " " + GITHUB[17:]),
    "GitHub token split by an ideographic space": (
        GITHUB_KIND,
        lambda _: GITHUB[:25] + "\u3000" + GITHUB[25:],
    ),
    "the service's own key split by a space": (OWN_KIND, lambda key: key[:24] + " " + key[24:]),
    "the service's own key with a zero width space": (OWN_KIND, lambda key: inside(key, "\u200b")),
    "a key of the service's shape with a Cyrillic \u0425": (
        OWN_KIND,
        lambda _: "ml_1a2b3c4d_\u0425b7kQ2mP9wR4tY6uI8oL1zC3vN5aS0dF7gH2",
    ),
}


def sentence(secret: str) -> str:
    return f"Deploy with {secret} from CI."


@dataclass
class World:
    project: Any
    agent: APIClient
    reviewer: APIClient
    memory: Memory
    other: Memory
    pair: MemoryPair
    proposal: Memory


@pytest.fixture
def world(project, reviewer):
    agent = client_with_key(project)
    person = APIClient()
    person.force_login(reviewer)
    memory = MemoryFactory(project=project, content="Calls to the ledger time out after 10 s.")
    other = MemoryFactory(project=project, content="Calls to the ledger time out after 30 s.")
    MemoryPair.objects.get_or_create(
        first=memory,
        second=other,
        defaults={"project": project, "kind": "conflict", "similarity": 0.9},
    )
    pair = MemoryPair.objects.get(first=memory, second=other)
    proposal = MemoryFactory(project=None, scope=Scope.GLOBAL, content="Use UTC in logs.")
    return World(project, agent, person, memory, other, pair, proposal)


def _memory_post(w: World, body: dict[str, Any]) -> Any:
    return w.agent.post(url(w.project, "memories"), {"type": "learning", **body}, format="json")


def _global_post(w: World, body: dict[str, Any]) -> Any:
    return w.agent.post("/api/memories/global", {"type": "pattern", **body}, format="json")


def _resolve(w: World, body: dict[str, Any]) -> Any:
    path = url(w.project, "conflicts", w.pair.pk, "resolve")
    return w.reviewer.post(path, body, format="json")


# field -> (the name the error gives it, how to send a text in it)
FIELDS: dict[str, tuple[str, Callable[[World, str], Any]]] = {
    "memory content": ("content", lambda w, t: _memory_post(w, {"content": t})),
    "memory summary": ("summary", lambda w, t: _memory_post(w, {"content": "Fine.", "summary": t})),
    "memory tags": ("tags", lambda w, t: _memory_post(w, {"content": "Fine.", "tags": ["ci", t]})),
    "edited content": (
        "content",
        lambda w, t: w.agent.patch(
            url(w.project, "memories", w.memory.pk), {"content": t}, format="json"
        ),
    ),
    "edit reason": (
        "reason",
        lambda w, t: w.agent.patch(
            url(w.project, "memories", w.memory.pk),
            {"content": "Better.", "reason": t},
            format="json",
        ),
    ),
    "flag reason": (
        "reason",
        lambda w, t: w.agent.post(
            url(w.project, "memories", w.memory.pk, "flag"), {"reason": t}, format="json"
        ),
    ),
    "reject reason": (
        "reason",
        lambda w, t: w.reviewer.patch(
            url(w.project, "memories", w.memory.pk, "reject"), {"reason": t}, format="json"
        ),
    ),
    "run title": (
        "taskTitle",
        lambda w, t: w.agent.post(
            url(w.project, "runs"), {"externalId": "r1", "taskTitle": t}, format="json"
        ),
    ),
    "run external id": (
        "externalId",
        lambda w, t: w.agent.post(url(w.project, "runs"), {"externalId": t}, format="json"),
    ),
    "run write scope": (
        "writeScope",
        lambda w, t: w.agent.post(
            url(w.project, "runs"), {"externalId": "r1", "writeScope": [t]}, format="json"
        ),
    ),
    "changed paths": (
        "paths",
        lambda w, t: w.agent.post(
            url(w.project, "changes"), {"paths": ["a.py", t], "ref": "abc"}, format="json"
        ),
    ),
    "change ref": (
        "ref",
        lambda w, t: w.agent.post(
            url(w.project, "changes"), {"paths": ["a.py"], "ref": t}, format="json"
        ),
    ),
    "global proposal content": ("content", lambda w, t: _global_post(w, {"content": t})),
    "global proposal summary": (
        "summary",
        lambda w, t: _global_post(w, {"content": "Fine.", "summary": t}),
    ),
    "global proposal tags": (
        "tags",
        lambda w, t: _global_post(w, {"content": "Fine.", "tags": [t]}),
    ),
    "global reject reason": (
        "reason",
        lambda w, t: w.reviewer.patch(
            f"/api/memories/global/{w.proposal.pk}/reject", {"reason": t}, format="json"
        ),
    ),
    "supersede reason": (
        "reason",
        lambda w, t: w.agent.post(
            url(w.project, "memories", w.memory.pk, "supersede"),
            {"by": w.other.pk, "reason": t},
            format="json",
        ),
    ),
    "conflict resolution reason": (
        "reason",
        lambda w, t: _resolve(w, {"action": "dismiss", "reason": t}),
    ),
    "conflict merge text": ("content", lambda w, t: _resolve(w, {"action": "merge", "content": t})),
    "conflict merge tags": ("tags", lambda w, t: _resolve(w, {"action": "merge", "tags": [t]})),
}


def stored() -> tuple[Any, ...]:
    """Everything a write could leave behind."""
    return (
        sorted(
            Memory.objects.values_list(
                "id", "content", "updated_at", "stale_at", "review_status", "superseded_by_id"
            )
        ),
        MemoryEvent.objects.count(),
        sorted(Run.objects.values_list("id", "task_title")),
        sorted(MemoryPair.objects.values_list("id", "status", "reason")),
        IdempotencyRecord.objects.count(),
    )


@pytest.mark.parametrize("field", FIELDS)
def test_every_disguise_in_every_field_is_refused_and_nothing_is_stored(world, field):
    name, send = FIELDS[field]
    before = stored()
    wrong = {}
    for disguise, (kind, make) in DISGUISES.items():
        secret = make(world.agent.token)
        response = send(world, sentence(secret))
        body = response.content.decode()
        problems = []
        if response.status_code != 400:
            problems.append(f"answered {response.status_code}")
        else:
            error = response.json()["error"]
            said = " ".join(error["fields"].get(name, [])) or error["message"]
            if name not in error["fields"] and name not in error["message"]:
                problems.append(f"does not name {name}: {error}")
            if kind not in said:
                problems.append(f"does not name {kind}: {said}")
        if any(shown in body for shown in (secret, GITHUB, AWS, world.agent.token)):
            problems.append("echoes the secret")
        if stored() != before:
            problems.append("stored something")
        if problems:
            wrong[disguise] = problems
    assert wrong == {}, f"{field}: {wrong}"


# --- ordinary text in any script is stored as written ------------------------------------------

ORDINARY = [
    "Die Zugangsdaten liegen im Tresor unter payments/stripe; nie im Code ablegen. Größe: 12 MB.",
    "Пароль базы хранится в Vault (ключ DB_PASSWORD_REF); порт 5433 после переезда, см. тикет 412.",
    "本番環境へのデプロイ前に src/core/ のテストをすべて実行すること。タイムアウトは30秒です。",
    "⚠️ Nicht löschen: der Cron-Job läuft um 03:00 UTC 👍🏽 (Team-Regel v2)",
    "The APAC region 2024 numbers are in the Q3 report v2 draft, section 4 b.",
    "Ελέγξτε το API v2 πριν από κάθε έκδοση· ο χρόνος λήξης είναι 30 s.",  # noqa: RUF001
]


@pytest.mark.parametrize("text", ORDINARY)
def test_ordinary_text_in_any_script_is_stored_as_written(world, text):
    w = world
    created = _memory_post(w, {"content": text, "summary": text[:200], "tags": [text[:100]]})
    assert created.status_code == 201, created.content
    memory = Memory.objects.get(pk=created.json()["id"])
    assert (memory.content, memory.summary, memory.tags) == (text, text[:200], [text[:100]])
    run = w.agent.post(
        url(w.project, "runs"), {"externalId": text[:60].strip(), "taskTitle": text}, format="json"
    )
    assert run.status_code == 201, run.content
    assert Run.objects.filter(external_id=text[:60].strip(), task_title=text).exists()
    flagged = w.agent.post(
        url(w.project, "memories", memory.pk, "flag"), {"reason": text}, format="json"
    )
    assert flagged.status_code == 200, flagged.content
    assert MemoryEvent.objects.filter(memory=memory, reason=text).exists()
    proposed = _global_post(w, {"content": text})
    assert proposed.status_code == 201, proposed.content
    assert Memory.objects.get(pk=proposed.json()["id"]).content == text
