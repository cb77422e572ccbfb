"""The dashboard: the projects a person can see, what waits for review, the lifecycle jobs."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from memories import roles, selectors
from memories.actors import Actor
from memories.counting import count_up_to
from policies.models import JobState
from review.views.parts import HtmxHttpRequest


@require_GET
@login_required
def dashboard(request: HtmxHttpRequest) -> HttpResponse:
    visible = roles.projects_for(request.user)
    sees_global = roles.role_in(request.user, None) is not None
    overview = selectors.projects_overview(within=visible)
    return render(
        request,
        "review/dashboard.html",
        {
            "overview": overview,
            "global_waiting": count_up_to(
                selectors.memories_for_review(project=None).filter(
                    selectors.global_readable(Actor.for_user(request.user)), project__isnull=True
                )
            )
            if sees_global
            else 0,
            "jobs": JobState.objects.all() if sees_global else JobState.objects.none(),
            "has_role": sees_global,
        },
    )
