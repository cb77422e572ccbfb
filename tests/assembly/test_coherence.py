"""Coherent assembly: of two qualifying memories in an open conflict, only the one with
precedence is given; repeats are given once; decided pairs follow the decision."""

from __future__ import annotations

import pytest
from django.test import Client

from assembly.coherence import OpenPair, coherence
from assembly.requests import ContextRequest
from assembly.services import context_assemble
from knowledge import decisions
from knowledge.models import MemoryPair
from memories import services
from memories.actors import Actor
from memories.models import Memory
from tests.api.conftest import client_with_key, url

pytestmark = pytest.mark.django_db
SYSTEM = Actor.system("tests")
TEN = "Calls to the payments API time out after 10 seconds."
THIRTY = "Calls to the payments API time out after 30 seconds."


@pytest.fixture(autouse=True)
def _no_cache(settings):
    """Each assembly here reads the store (the cache's invalidation is tested elsewhere)."""
    settings.ASSEMBLY_CACHE_SECONDS = 0


def assemble(project, **kwargs):
    kwargs.setdefault("token_budget", 2000)
    kwargs.setdefault("intent", "payments API timeout")
    return context_assemble(project=project, request=ContextRequest(**kwargs), actor=SYSTEM)


def given(result):
    return [item.id for item in result.items]


def pair_of(a: Memory, b: Memory) -> MemoryPair:
    return MemoryPair.objects.get(first_id=min(a.pk, b.pk), second_id=max(a.pk, b.pk))


def test_an_open_conflict_gives_the_approved_one_and_says_why(project, make_memory, reviewer_actor):
    approved = make_memory(project=project, content=TEN)
    services.memory_approve(memory=approved, actor=reviewer_actor)
    pending = make_memory(project=project, content=THIRTY)
    assert pair_of(approved, pending).status == "open"
    result = assemble(project)
    assert given(result) == [approved.pk]
    [dropped] = [d for d in result.dropped if d.id == pending.pk]
    assert (dropped.reason, dropped.conflicts_with) == ("conflict", approved.pk)
    [warning] = [w for w in result.metadata.warnings if w.code == "CONFLICT"]
    assert f"{pending.pk} (conflicts with {approved.pk})" in warning.message
    assert result.metadata.coherence == 1.0


def test_precedence_is_confidence_then_the_newer(project, make_memory):
    older = make_memory(project=project, content=TEN)
    newer = make_memory(project=project, content=THIRTY)
    # Same status and confidence: the newer is given.
    assert given(assemble(project)) == [newer.pk]
    Memory.objects.filter(pk=older.pk).update(confidence=0.9)
    assert given(assemble(project)) == [older.pk]


def test_a_conflict_with_a_memory_that_does_not_qualify_changes_nothing(project, make_memory):
    weak = make_memory(project=project, content=TEN)
    strong = make_memory(project=project, content=THIRTY)
    assert pair_of(weak, strong).status == "open"
    # Below the selection threshold: it was never going to be given.
    Memory.objects.filter(pk=strong.pk).update(confidence=0.1)
    result = assemble(project)
    assert given(result) == [weak.pk]
    assert not [w for w in result.metadata.warnings if w.code == "CONFLICT"]
    assert "conflict" not in {d.reason for d in result.dropped}


def test_a_decided_pair_follows_the_decision(project, make_memory, reviewer_actor):
    old = make_memory(project=project, content=TEN)
    new = make_memory(project=project, content=THIRTY)
    pair = pair_of(old, new)
    decisions.pair_resolve(pair_id=pair.pk, action="dismiss", actor=reviewer_actor)
    # Judged compatible: both are given.
    assert sorted(given(assemble(project))) == sorted([old.pk, new.pk])
    # Reopened by new words, then decided by keeping the older one.
    services.memory_update(memory=new, actor=reviewer_actor, content=THIRTY.replace("30", "45"))
    assert given(assemble(project)) == [new.pk]
    decisions.pair_resolve(pair_id=pair.pk, action="keep", memory_id=old.pk, actor=reviewer_actor)
    result = assemble(project)
    assert given(result) == [old.pk]
    assert new.pk not in {d.id for d in result.dropped}  # superseded: not a candidate at all


def test_flag_mode_gives_both_and_reports_the_coherence(project, make_memory):
    project.policy.conflict_mode = "flag"
    project.policy.save()
    old = make_memory(project=project, content=TEN)
    new = make_memory(project=project, content=THIRTY)
    other = make_memory(project=project, content="Payments API keys rotate every 90 days.")
    result = assemble(project)
    assert set(given(result)) == {old.pk, new.pk, other.pk}
    # Three memories, three pairs, one in conflict.
    assert result.metadata.coherence == round(1 - 1 / 3, 4)
    [warning] = [w for w in result.metadata.warnings if w.code == "CONFLICT"]
    assert f"{old.pk} and {new.pk}" in warning.message


def test_an_open_repeat_is_given_once(project, make_memory):
    rule = make_memory(project=project, content="Payments API calls need an idempotency key.")
    again = make_memory(
        project=project, content="Payments API calls need an idempotency key! (seen in run-9)"
    )
    assert pair_of(rule, again).kind == "repeat"
    result = assemble(project)
    assert len([i for i in given(result) if i in (rule.pk, again.pk)]) == 1
    assert {d.reason for d in result.dropped if d.id in (rule.pk, again.pk)} == {"similar"}


def test_coherence_is_the_share_of_pairs_without_an_open_conflict():
    conflict = [OpenPair(1, "conflict", 1, 2)]
    assert coherence([], conflict) == 1.0
    assert coherence([1], conflict) == 1.0
    assert coherence([1, 2], conflict) == 0.0
    assert coherence([1, 2, 3, 4], conflict) == round(1 - 1 / 6, 4)
    assert coherence([1, 3], conflict) == 1.0


def test_the_api_answers_with_the_conflict_drop_and_the_coherence(project, make_memory):
    old = make_memory(project=project, content=TEN)
    new = make_memory(project=project, content=THIRTY)
    agent = client_with_key(project)
    body = agent.post(
        url(project, "context"), {"tokenBudget": 500, "intent": "payments timeout"},
        format="json",
    ).json()  # fmt: skip
    assert [item["id"] for item in body["items"]] == [new.pk]
    dropped = next(d for d in body["dropped"] if d["id"] == old.pk)
    assert dropped == {"id": old.pk, "source": "project", "reason": "conflict",
                       "conflictsWith": new.pk}  # fmt: skip
    assert body["metadata"]["coherence"] == 1.0
    assert "CONFLICT" in {w["code"] for w in body["metadata"]["warnings"]}


def test_metrics_export_coherence_and_conflicts(project, make_memory, settings, reviewer_actor):
    make_memory(project=project, content=TEN)
    make_memory(project=project, content=THIRTY)
    decisions.pair_resolve(
        pair_id=MemoryPair.objects.get().pk, action="dismiss", actor=reviewer_actor
    )
    assemble(project)
    settings.METRICS_TOKEN = "scrape"
    text = Client().get("/metrics", HTTP_AUTHORIZATION="Bearer scrape").content.decode()
    assert "memory_coherence_score_bucket" in text
    assert 'memory_conflicts_total{event="found",kind="conflict"}' in text
    assert 'memory_conflicts_total{event="resolved",kind="conflict"}' in text
