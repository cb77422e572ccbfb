"""Storage tiers follow the last use."""

from __future__ import annotations

import pytest

from memories.models import EventAction, Memory, MemoryEvent
from policies.tiers import update_tiers
from tests.policies.support import fresh

pytestmark = pytest.mark.django_db


def test_tiers_follow_the_last_use_without_history(project, make_memory, age):
    hot, warm, cold = (make_memory(project=project) for _ in range(3))
    age([hot], created=200, accessed=1)
    age([warm], created=200, accessed=10)
    age([cold], created=200, accessed=100)
    Memory.objects.update(tier="hot")
    assert update_tiers().total == 2
    assert [fresh(m).tier for m in (hot, warm, cold)] == ["hot", "warm", "cold"]
    assert not MemoryEvent.objects.exclude(action=EventAction.CREATED).exists()
    assert update_tiers().total == 0
