"""Give a person a role in a project (or take it away), or make them a global reviewer."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.core.management.base import BaseCommand, CommandError

from memories.models import Membership, Project, Role


class Command(BaseCommand):
    help = (
        "Give USER the ROLE (viewer, reviewer, maintainer) in the project SLUG, or --remove"
        " it; --global-reviewer lets USER approve and reject global memories."
    )

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("username")
        parser.add_argument("slug", nargs="?", help="the project's slug")
        parser.add_argument("role", nargs="?", choices=list(Role.values))
        parser.add_argument("--remove", action="store_true", help="take the role away")
        parser.add_argument(
            "--global-reviewer", action="store_true", help="review global memories (or --remove)"
        )

    def handle(
        self,
        *args: Any,
        username: str,
        slug: str | None,
        role: str | None,
        remove: bool,
        global_reviewer: bool,
        **options: Any,
    ) -> None:
        user = get_user_model().objects.filter(username=username).first()
        if user is None:
            raise CommandError(f"No user {username!r}: create it first (manage.py createsuperuser"
                               " or the admin).")  # fmt: skip
        if global_reviewer:
            permission = Permission.objects.get(
                content_type__app_label="memories", codename="review_global_memory"
            )
            if remove:
                user.user_permissions.remove(permission)
            else:
                user.user_permissions.add(permission)
            self.stdout.write(
                f"{username} {'no longer reviews' if remove else 'now reviews'} global memories."
            )
            return
        if slug is None:
            raise CommandError("Give the project's slug (and a role), or --global-reviewer.")
        project = Project.objects.filter(slug=slug).first()
        if project is None:
            raise CommandError(f"No project with slug {slug!r}.")
        if remove:
            deleted, _ = Membership.objects.filter(user=user, project=project).delete()
            self.stdout.write(
                f"{username} has no role in {slug} now." if deleted else f"{username} had none."
            )
            return
        if role is None:
            raise CommandError(f"Give the role: one of {', '.join(Role.values)}.")
        Membership.objects.update_or_create(user=user, project=project, defaults={"role": role})
        self.stdout.write(f"{username} is {role} of {slug}.")
