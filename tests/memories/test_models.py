"""The database itself refuses what the services would never write."""

from __future__ import annotations

import pytest
from django.db import IntegrityError, transaction

from memories.models import Memory, MemoryPolicy

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    "values",
    [
        {"confidence": 1.01},
        {"confidence": -0.01},
        {"relevance_score": 2.0},
        {"type": "rumour"},
        {"source": "oracle"},
        {"scope": "galaxy"},
        {"tier": "lukewarm"},
        {"review_status": "maybe"},
        {"content": ""},
        {"content": "x" * 20001},
        {"project": None},
        {"scope": "run"},
        {"review_status": "approved", "approved_at": None},
    ],
)
def test_check_constraints_refuse_bad_rows(make_memory, values):
    memory = make_memory()
    with pytest.raises(IntegrityError), transaction.atomic():
        Memory.objects.filter(pk=memory.pk).update(**values)


@pytest.mark.parametrize("values", [{"min_confidence": 1.5}, {"deactivate_below": -1}])
def test_policy_ranges_are_constrained(project, values):
    with pytest.raises(IntegrityError), transaction.atomic():
        MemoryPolicy.objects.filter(project=project).update(**values)


def test_search_vector_follows_the_content(make_memory):
    memory = make_memory(content="Migrations lock the events table")
    assert Memory.objects.filter(search_vector="migration").get().pk == memory.pk
