"""What the policy jobs' tests share."""

from __future__ import annotations

from memories.actors import Actor
from memories.models import Memory, MemoryEvent, MemoryPolicy

SYSTEM = Actor.system("tests")


def fresh(memory):
    return Memory.objects.get(pk=memory.pk)


def events(memory, action):
    return list(MemoryEvent.objects.filter(memory_id=memory.pk, action=action))


def set_policy(project, **fields):
    MemoryPolicy.objects.filter(project=project).update(**fields)
