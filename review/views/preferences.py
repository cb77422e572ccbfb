"""Users' preferences on the review pages: a project's, by user (its viewers read them), and
the proposals of preferences for every project, which reviewers of global memories approve
or reject here."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied, ValidationError
from django.db.models import Q
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from memories import roles
from memories.actors import Actor
from memories.models import Role
from people import preferences
from people.models import Preference, PreferenceStatus
from review.views.access import visible_project
from review.views.parts import HtmxHttpRequest, paginate, return_url

PAGE_SIZE = 50


@require_GET
@login_required
def project_preferences(request: HtmxHttpRequest, slug: str) -> HttpResponse:
    """A project's users' preferences, by user and key; ``?user=`` one user's."""
    project = visible_project(request, slug)
    user = request.GET.get("user", "").strip()[:200]
    found = Preference.objects.filter(project=project)
    if user:
        found = found.filter(user_ref=user)
    return render(
        request,
        "review/preferences.html",
        {
            "project": project,
            "user_ref": user,
            "page": paginate(request, found.order_by("user_ref", "key"), PAGE_SIZE),
        },
    )


def _global_reviewer(request: HtmxHttpRequest) -> bool:
    return roles.may(request.user, None, Role.REVIEWER)


@require_GET
@login_required
def global_preferences(request: HtmxHttpRequest) -> HttpResponse:
    """Preferences for every project: proposals waiting (for reviewers of global memories
    and the people of the project that proposed them), then those in force (for people with
    a role somewhere)."""
    visible = Q(status=PreferenceStatus.APPROVED)
    if roles.role_in(request.user, None) is None:
        visible = Q(pk__in=[])
    elif _global_reviewer(request):
        visible |= Q(status=PreferenceStatus.PENDING)
    else:
        visible |= Q(
            status=PreferenceStatus.PENDING, proposed_in__in=roles.projects_for(request.user)
        )
    found = Preference.objects.filter(visible, project__isnull=True).select_related("proposed_in")
    return render(
        request,
        "review/global_preferences.html",
        {
            "pending": found.filter(status=PreferenceStatus.PENDING).order_by("-updated_at")[:200],
            "page": paginate(
                request,
                found.filter(status=PreferenceStatus.APPROVED).order_by("user_ref", "key"),
                PAGE_SIZE,
            ),
            "may_decide": _global_reviewer(request),
        },
    )


@require_POST
@login_required
def decide_global_preference(request: HtmxHttpRequest, pk: int, action: str) -> HttpResponse:
    decide = {"approve": preferences.approve_global, "reject": preferences.reject_global}[action]
    if roles.role_in(request.user, None) is None:
        raise Http404("Nothing here, or nothing you have a role in.")
    try:
        decided = decide(preference_id=pk, actor=Actor.for_user(request.user))
    except Preference.DoesNotExist:
        raise Http404("No such proposal.") from None
    except PermissionDenied:
        raise
    except ValidationError as invalid:
        messages.error(request, " ".join(invalid.messages))
    else:
        done = "Approved" if action == "approve" else "Rejected"
        messages.success(request, f"{done}: {decided.user_ref}'s {decided.key}.")
    return redirect(return_url(request, reverse("review:global-preferences")))
