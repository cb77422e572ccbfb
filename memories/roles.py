"""Who may read and change what.

A person's role in a project is the highest of:

* their membership's role there (``Membership``: viewer, reviewer or maintainer);
* grants that span every project: a superuser is maintainer everywhere, the permission
  ``memories.review_memory`` makes a reviewer everywhere and ``memories.view_every_project``
  a viewer everywhere (the demo's Reviewers group has the first). The models' own
  permissions (``view_memory``, ``change_memory``...) only open the admin's pages: what a
  person sees and changes there is still their projects'.

Global memories (shared by every project) are read by anyone with a role somewhere, and
approved or rejected by global reviewers: the permission ``memories.review_global_memory``
(or a superuser). A person with no role sees nothing: pages and the API answer 404.

A person's memberships are read once per request (cached on the user object).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django.db.models import QuerySet

from memories.models import RANKS, Membership, Project, Role

if TYPE_CHECKING:
    from django.contrib.auth.models import AnonymousUser, User

ORG_REVIEW = "memories.review_memory"
ORG_VIEW = "memories.view_every_project"
GLOBAL_REVIEW = "memories.review_global_memory"
_CACHE = "_memory_layer_roles"


def _memberships(user: User) -> dict[int, Role]:
    cached: dict[int, Role] | None = getattr(user, _CACHE, None)
    if cached is None:
        cached = {
            project_id: Role(role)
            for project_id, role in Membership.objects.filter(user=user).values_list(
                "project_id", "role"
            )
        }
        setattr(user, _CACHE, cached)
    return cached


def forget(user: Any) -> None:
    """Read the user's memberships afresh (after granting or taking a role)."""
    if hasattr(user, _CACHE):
        delattr(user, _CACHE)


def _org_role(user: User) -> Role | None:
    if user.is_superuser:
        return Role.MAINTAINER
    if user.has_perm(ORG_REVIEW):
        return Role.REVIEWER
    if user.has_perm(ORG_VIEW):
        return Role.VIEWER
    return None


def _higher(a: Role | None, b: Role | None) -> Role | None:
    if a is None or b is None:
        return a or b
    return a if RANKS[a] >= RANKS[b] else b


def role_in(user: User | AnonymousUser, project_id: int | None) -> Role | None:
    """The user's role in a project; for ``None`` (global memories) reviewer or viewer."""
    if not user.is_authenticated or not user.is_active:
        return None
    person: User = user
    if project_id is None:
        if person.is_superuser or person.has_perm(GLOBAL_REVIEW):
            return Role.REVIEWER
        return Role.VIEWER if (_org_role(person) or _memberships(person)) else None
    return _higher(_memberships(person).get(project_id), _org_role(person))


def may(user: User | AnonymousUser, project_id: int | None, role: Role) -> bool:
    """Whether the user holds at least ``role`` in the project (None: global memories)."""
    if project_id is not None and user.is_authenticated and user.is_active:
        org = _org_role(user)
        if org is not None and RANKS[org] >= RANKS[role]:
            return True  # a grant over every project: no membership to read
    held = role_in(user, project_id)
    return held is not None and RANKS[held] >= RANKS[role]


def projects_for(user: User | AnonymousUser, role: Role = Role.VIEWER) -> QuerySet[Project]:
    """The projects where the user holds at least ``role``."""
    if not user.is_authenticated or not user.is_active:
        return Project.objects.none()
    person: User = user
    org = _org_role(person)
    if org is not None and RANKS[org] >= RANKS[role]:
        return Project.objects.all()
    ids = [pid for pid, held in _memberships(person).items() if RANKS[held] >= RANKS[role]]
    return Project.objects.filter(pk__in=ids)
