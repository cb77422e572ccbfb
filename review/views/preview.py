"""The preview: exactly what an agent would receive for a task, and why the rest was not given."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict
from typing import Any

from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.http import HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from assembly.requests import ContextRequest
from assembly.services import context_assemble
from memories.actors import Actor
from memories.models import Memory, Project
from review.forms import PreviewForm
from review.views.access import visible_project
from review.views.parts import HtmxHttpRequest, template_for

# Why a memory that matched was not given, in words (the codes of the API's `dropped`).
DROP_REASONS = {
    "budget": "its line did not fit in the token budget left",
    "limit": "the limit on how many memories are given was reached",
    "duplicate": "its line is already given, word for word",
    "similar": "it says nearly what a better-ranked memory given says (named)",
    "conflict": "it contradicts a memory given, which has precedence (an open conflict)",
    "below_confidence": "its confidence is below the project's minimum",
    "expired": "it has expired",
    "source_timeout": "its source did not answer in time (the time budget)",
}


@require_GET
@login_required
def preview(request: HtmxHttpRequest, slug: str) -> HttpResponse:
    """Exactly what an agent would receive for a task: the same service as the API's, with
    nothing recorded."""
    project = visible_project(request, slug, Project.objects.select_related("policy"))
    form = PreviewForm(request.GET if "token_budget" in request.GET else None)
    result = None
    memories: dict[int, Memory] = {}
    if form.is_valid():
        try:
            result = context_assemble(
                project=project,
                request=ContextRequest(
                    token_budget=form.cleaned_data["token_budget"],
                    write_scope=form.write_scope_entries(),
                    intent=form.cleaned_data["intent"],
                    lod=form.cleaned_data["lod"] or "atomic",
                    limit=form.cleaned_data["limit"],
                ),
                actor=Actor.for_user(request.user),
                record=False,
            )
        except ValidationError as error:
            for field, problems in error.message_dict.items():
                form.add_error(field if field in form.fields else None, problems)
        else:
            ids = [item.id for item in result.items]
            ids += [row.id for row in result.dropped if row.id is not None]
            memories = Memory.objects.only(
                "id", "type", "content", "confidence", "token_count"
            ).in_bulk(ids)
    return render(
        request,
        template_for(request, "review/preview.html", "results"),
        {
            "project": project,
            "form": form,
            "result": result,
            "chosen": _with_memories(result.items if result else [], memories),
            "dropped": _with_memories(result.dropped if result else [], memories),
            "limit": (form.cleaned_data.get("limit") if form.is_bound and form.is_valid() else None)
            or project.policy.selection_limit,
            "policy_limit": project.policy.selection_limit,
            "reasons": DROP_REASONS,
        },
    )


def _with_memories(rows: Sequence[Any], memories: dict[int, Memory]) -> list[dict[str, Any]]:
    """Each chosen or dropped row of an assembly, with the memory it names and the names of
    its score parts in words (for the page)."""
    shown = []
    for row in rows:
        fields = asdict(row)
        if "score_parts" in fields:
            fields["score_parts"] = {
                name.replace("_", " "): value for name, value in fields["score_parts"].items()
            }
        shown.append({**fields, "memory": memories.get(row.id)})
    return shown
