"""Who may do what in a project: a person's role there."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from memories.models.projects import Project


class Role(models.TextChoices):
    """Each role may do what the one before it may, and more."""

    VIEWER = "viewer", "viewer: reads the project's memories, runs and previews"
    REVIEWER = "reviewer", "reviewer: also approves, rejects, edits and decides pairs"
    MAINTAINER = "maintainer", "maintainer: also the project's policy, keys and members"


RANKS = {Role.VIEWER: 1, Role.REVIEWER: 2, Role.MAINTAINER: 3}


class Membership(models.Model):
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="members")
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships"
    )
    role = models.CharField(max_length=16, choices=Role)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "project_members"
        ordering = ["project", "user"]
        constraints = [
            models.UniqueConstraint(fields=["user", "project"], name="one_role_per_project")
        ]

    def __str__(self) -> str:
        return f"{self.user} is {self.role} of {self.project}"
