"""Read the entities of the memories already stored (written before entities were read, or
after a project's marked words changed)."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError

from knowledge import entities
from memories.models import Project


class Command(BaseCommand):
    help = "Read again the entities every memory (of one project) mentions."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--project", help="the project's slug (default: every memory)")
        parser.add_argument("--batch", type=int, default=entities.BATCH)

    def handle(self, *args: Any, project: str | None, batch: int, **options: Any) -> None:
        project_id = None
        if project:
            found = Project.objects.filter(slug=project).first()
            if found is None:
                raise CommandError(f"No project with the slug {project!r}.")
            project_id = found.pk
        said = entities.refresh_all(project_id=project_id, batch=max(1, batch))
        self.stdout.write(f"{said} mentions read.")
