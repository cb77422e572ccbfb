"""What a reviewer does to memories: approve, reject, pin, edit, and undo.

Every action is a POST to a service; without JavaScript it redirects back to the page it
came from with a flash message, with htmx it answers with the row it changed (or nothing,
when the row leaves the queue) and the messages, swapped out of band.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any
from urllib.parse import urlsplit

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.http import Http404, HttpResponse, HttpResponseRedirect, QueryDict
from django.shortcuts import get_object_or_404, render
from django.template.loader import render_to_string
from django.urls import resolve, reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from memories import selectors, services
from memories.actors import Actor
from memories.models import Memory, MemoryEvent
from memories.text import is_whole_number
from review.forms import MemoryEditForm
from review.views.access import is_reviewer, may_read, owner, reviewer_for, visible_project
from review.views.parts import HtmxHttpRequest, return_url
from review.views.queue import queue_context

ROWS = "review/rows.html"


ACTIONS: dict[str, tuple[Callable[..., services.ChangeResult], dict[str, Any], str]] = {
    "approve": (services.memories_approve, {}, "Approved"),
    "reject": (services.memories_reject, {}, "Rejected"),
    "pin": (services.memories_set_pinned, {"pinned": True}, "Pinned"),
    "unpin": (services.memories_set_pinned, {"pinned": False}, "Unpinned"),
}


@require_POST
@login_required
def memory_action(request: HtmxHttpRequest, pk: int, action: str) -> HttpResponse:
    memory = get_object_or_404(Memory.objects.only("id", "content", "project", "scope"), pk=pk)
    actor = reviewer_for(request, [owner(memory)])
    service, options, done = ACTIONS[action]
    result = service(memory_ids=[memory.pk], actor=actor, **options)
    if result.changed:
        messages.success(request, f"{done}: {_quote(memory.content)}", extra_tags=_undo(result))
    else:
        messages.info(request, f"Nothing to change: {_quote(memory.content)}")
    return _after_change(request, [memory.pk])


@require_POST
@login_required
def memory_bulk(request: HtmxHttpRequest) -> HttpResponse:
    action = request.POST.get("action", "")
    ids = [int(v) for v in request.POST.getlist("ids") if is_whole_number(v) and len(v) <= 18]
    if action not in ("approve", "reject") or not ids:
        Actor.for_user(request.user)
        messages.error(
            request,
            "Select one or more memories, then approve or reject them.",
            extra_tags="selection",
        )
        return _after_change(request, [])
    chosen = Memory.objects.filter(pk__in=ids).only("id", "project", "scope")
    actor = reviewer_for(request, [owner(memory) for memory in chosen])
    service, options, done = ACTIONS[action]
    result = service(memory_ids=ids, actor=actor, **options)
    messages.success(request, f"{done} {_count(result.changed)}.", extra_tags=_undo(result))
    if result.missing_ids:
        messages.warning(request, f"{_count(result.missing_ids)} no longer exist.")
    return _after_change(request, ids)


@require_http_methods(["GET", "POST"])
@login_required
def memory_edit(request: HtmxHttpRequest, pk: int) -> HttpResponse:
    memory = get_object_or_404(selectors.memory_rows(Memory.objects.all()), pk=pk)
    actor = reviewer_for(request, [owner(memory)])
    view = request.POST.get("view") or request.GET.get("view", "list")
    if request.method == "POST":
        form = MemoryEditForm(request.POST)
        if form.is_valid():
            try:
                services.memory_update(memory=memory, actor=actor, **form.changes())
            except ValidationError as error:
                for field, problems in error.message_dict.items():
                    form.add_error(field if field in form.fields else None, problems)
            else:
                messages.success(request, f"Saved: {_quote(form.cleaned_data['content'])}")
                return _after_change(request, [memory.pk])
    else:
        form = MemoryEditForm.for_memory(memory)
    context = {"memory": memory, "form": form, "view": view, "next": return_url(request, "")}
    if request.htmx:
        # A save answers out of band (like every action); the form it opens does not.
        return render(
            request, f"{ROWS}#{'oob-edit-row' if request.method == 'POST' else 'edit-row'}", context
        )
    return render(request, "review/edit.html", context)


@require_GET
@login_required
def memory_row(request: HtmxHttpRequest, pk: int) -> HttpResponse:
    """One row as the lists show it (what an inline edit's Cancel puts back)."""
    memory = get_object_or_404(selectors.memory_rows(Memory.objects.all()), pk=pk)
    may_read(request, memory)
    return render(
        request,
        f"{ROWS}#row",
        {
            "memory": memory,
            "view": request.GET.get("view", "list"),
            "is_reviewer": is_reviewer(request, owner(memory)),
        },
    )


def _after_change(request: HtmxHttpRequest, ids: Sequence[int]) -> HttpResponse:
    """Back to the page without JavaScript; with htmx, the changed rows (a row that left
    the queue is removed) and the messages, out of band."""
    view = request.POST.get("view", "list")
    if not request.htmx:
        return HttpResponseRedirect(return_url(request, reverse("review:queue")))
    if view == "queue":
        return _refill(request)
    if view == "detail":
        # A memory's page shows its fields and history too: all of it comes back.
        response = HttpResponse("")
        response["HX-Refresh"] = "true"
        return response
    rows = {m.pk: m for m in selectors.memory_rows(Memory.objects.filter(pk__in=ids))}
    in_queue = (
        set(selectors.memories_for_review().filter(pk__in=ids).values_list("pk", flat=True))
        if view == "queue"
        else set(rows)
    )
    parts = [
        render_to_string(
            f"{ROWS}#oob-row",
            {
                "pk": pk,
                "memory": rows.get(pk) if pk in in_queue else None,
                "view": view,
                "is_reviewer": True,
                "next": return_url(request, ""),
            },
            request=request,
        )
        for pk in ids
    ]
    parts.append(
        render_to_string(
            f"{ROWS}#messages",
            {"oob": True, "view": view, "next_url": return_url(request, "")},
            request=request,
        )
    )
    return HttpResponse("".join(parts))


def _refill(request: HtmxHttpRequest) -> HttpResponse:
    """The queue's page again after an action, as it now is: what left it is gone, the
    page refills from the rows after it, the counts are the new ones, nothing is skipped."""
    page_url = return_url(request, reverse("review:queue"))
    parts = urlsplit(page_url)
    try:
        match = resolve(parts.path)
    except Http404:
        match = resolve(reverse("review:queue"))
    slug = match.kwargs.get("slug")
    project = visible_project(request, slug) if slug else None
    context = queue_context(request, project, QueryDict(parts.query))
    context.update(oob=True, next_url=page_url)
    return HttpResponse(
        render_to_string("review/queue.html#results", context, request=request)
        + render_to_string(
            f"{ROWS}#messages",
            {"oob": True, "view": "queue", "next_url": page_url},
            request=request,
        )
    )


@require_POST
@login_required
def undo(request: HtmxHttpRequest) -> HttpResponse:
    """Take back an approval, rejection or pin through its history rows (the Undo of the
    message that said it was done)."""
    raw = request.POST.get("events", "")
    wanted = [int(v) for v in raw.split(",") if is_whole_number(v) and len(v) <= 18]
    events = MemoryEvent.objects.filter(pk__in=wanted).select_related(None)
    owners = {
        memory.pk: owner(memory)
        for memory in Memory.objects.filter(pk__in=events.values("memory_id")).only(
            "id", "project", "scope"
        )
    }
    actor = reviewer_for(request, owners.values())
    result = services.memories_undo(event_ids=wanted, actor=actor)
    if result.undone:
        messages.success(request, f"Undone: {_count(result.undone)} as before.")
    for memory_id, why in result.refused[:5]:
        messages.warning(request, f"Memory {memory_id} was not put back: {why}.")
    if not result.undone and not result.refused:
        messages.info(request, "Nothing to undo.")
    return _after_change(request, result.undone)


def _undo(result: services.ChangeResult) -> str:
    """The message's tag that offers to undo a change: its history rows (review_tags)."""
    return f"undo:{','.join(str(event.pk) for event in result.events)}" if result.events else ""


def _quote(content: str, length: int = 60) -> str:
    return f"“{content[:length]}{'…' if len(content) > length else ''}”"


def _count(items: Iterable[object]) -> str:
    count = len(list(items))
    return f"{count} memor{'y' if count == 1 else 'ies'}"
