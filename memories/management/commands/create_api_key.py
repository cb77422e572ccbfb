"""Make an API key for a project's agents; the key is printed once, as the last line."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError

from memories import services
from memories.models import Project


class Command(BaseCommand):
    help = "Create an API key for the project with this slug. Prints the key once, last."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("slug", help="the project's slug")
        parser.add_argument("--name", required=True, help="what the key is for, e.g. 'ci-agent'")
        parser.add_argument(
            "--create-project", action="store_true", help="make the project if it does not exist"
        )

    def handle(
        self, *args: Any, slug: str, name: str, create_project: bool, **options: Any
    ) -> None:
        project = Project.objects.filter(slug=slug).first()
        if project is None:
            if not create_project:
                raise CommandError(
                    f"No project with slug {slug!r}; add --create-project to make it."
                )
            project = services.project_create(name=slug.replace("-", " ").title(), slug=slug)
            self.stderr.write(f"Created project {slug!r} (id {project.pk}).")
        api_key, token = services.api_key_create(project=project, name=name)
        self.stderr.write(
            f"API key {api_key.name!r} for project {project.slug!r} (id {project.pk}); "
            "store it now, it is not shown again:"
        )
        self.stdout.write(token)
