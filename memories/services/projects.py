"""Projects and their policies."""

from __future__ import annotations

from typing import Any

from django.db import transaction

from memories.models import MemoryPolicy, Project


@transaction.atomic
def project_create(*, name: str, slug: str, description: str = "", **policy: Any) -> Project:
    project = Project(name=name, slug=slug, description=description)
    project.full_clean()
    project.save()
    memory_policy = MemoryPolicy(project=project, **policy)
    memory_policy.full_clean()
    memory_policy.save()
    return project
