"""The review pages: where humans keep agent memory honest.

Each page is one view that renders the whole page or, for an htmx request aimed at one of
its parts, that part only (django-template-partials). Every action is a POST to a service;
without JavaScript it redirects back to the page it came from with a flash message, with
htmx it answers with the row it changed (or nothing, when the row leaves the queue) and the
messages, swapped out of band.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any
from urllib.parse import urlsplit

from django.contrib import messages
from django.contrib.auth import get_user_model
from django.contrib.auth.decorators import login_required
from django.core import signing
from django.core.exceptions import PermissionDenied, ValidationError
from django.core.paginator import Page, Paginator
from django.db.models import Q, QuerySet
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect, QueryDict
from django.shortcuts import get_object_or_404, render
from django.template.loader import render_to_string
from django.urls import resolve, reverse
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_GET, require_http_methods, require_POST
from django_htmx.middleware import HtmxDetails

from assembly.services import ContextRequest, context_assemble
from knowledge import decisions, queries
from knowledge.models import MemoryPair
from memories import roles, selectors, services
from memories.actors import Actor
from memories.models import Memory, MemoryEvent, Project, ReviewStatus, Role, Run, Scope
from memories.text import is_whole_number
from policies.models import JobState
from review.forms import MemoryEditForm, MemoryListFilter, PreviewForm


class HtmxHttpRequest(HttpRequest):
    """A request as django-htmx's middleware leaves it."""

    htmx: HtmxDetails


PAGE_SIZE = 50
RUNS_PAGE_SIZE = 20
HISTORY_SHOWN = 200
ROWS = "review/rows.html"


# --- who may see and do what (memories.roles) ---------------------------------------------------


def _owner(memory: Memory) -> int | None:
    """The project whose roles govern a memory: None for a global memory."""
    return None if memory.scope == Scope.GLOBAL else memory.project_id


def _may_see(request: HtmxHttpRequest, project_id: int | None) -> None:
    """A 404, exactly as for what does not exist, unless the person has a role there."""
    if not roles.may(request.user, project_id, Role.VIEWER):
        raise Http404("Nothing here, or nothing you have a role in.")


def _project(request: HtmxHttpRequest, slug: str, queryset: Any = None) -> Project:
    project: Project = get_object_or_404(
        queryset if queryset is not None else Project.objects.all(), slug=slug
    )
    _may_see(request, project.pk)
    return project


def _may_read(request: HtmxHttpRequest, memory: Memory) -> None:
    """A 404 unless the person may read the memory: a role in its project; for a global
    proposal not yet approved, a global reviewer or its proposer (memories.selectors)."""
    _may_see(request, _owner(memory))
    if memory.scope == Scope.GLOBAL and memory.review_status != ReviewStatus.APPROVED:
        readable = selectors.global_memories_for(actor=Actor.for_user(request.user))
        if not readable.filter(pk=memory.pk).exists():
            raise Http404("Nothing here, or nothing you have a role in.")


def _is_reviewer(request: HtmxHttpRequest, project_id: int | None) -> bool:
    return roles.may(request.user, project_id, Role.REVIEWER)


def _reviews_all_it_sees(request: HtmxHttpRequest) -> bool:
    """Whether the person reviews every project (and the global memories) they can see:
    then a page of every project offers its actions; otherwise a project's own page does."""
    seen = set(roles.projects_for(request.user).values_list("pk", flat=True))
    reviewed = set(roles.projects_for(request.user, Role.REVIEWER).values_list("pk", flat=True))
    globals_ok = roles.role_in(request.user, None) in (None, Role.REVIEWER)
    return seen <= reviewed and globals_ok


def _reviewer(request: HtmxHttpRequest, project_ids: Iterable[int | None]) -> Actor:
    """The signed-in reviewer of every one of these projects, or a 404 (no role) or 403 (a
    viewer)."""
    for project_id in set(project_ids):
        _may_see(request, project_id)
        if not _is_reviewer(request, project_id):
            raise PermissionDenied("Only the project's reviewers may change its memories.")
    return Actor.for_user(request.user)


def _page(request: HtmxHttpRequest, queryset: QuerySet[Any], size: int = PAGE_SIZE) -> Page:
    return Paginator(queryset, size).get_page(request.GET.get("page"))


def _part(request: HtmxHttpRequest, template: str, part: str) -> str:
    """The template to render: the page, or its ``part`` when htmx asks for that part only."""
    if request.htmx and request.htmx.target == part:
        return f"{template}#{part}"
    return template


def _back(request: HtmxHttpRequest, fallback: str) -> str:
    """Where an action returns to without JavaScript: the page it was posted from."""
    target = request.POST.get("next", "")
    if url_has_allowed_host_and_scheme(
        target, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    ):
        return target
    return fallback


# --- pages ------------------------------------------------------------------------------------


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
            "global_waiting": selectors.memories_for_review(project=None)
            .filter(selectors.global_readable(Actor.for_user(request.user)), project__isnull=True)
            .count()
            if sees_global
            else 0,
            "jobs": JobState.objects.all() if sees_global else JobState.objects.none(),
            "has_role": sees_global,
        },
    )


@require_GET
@login_required
def queue(request: HtmxHttpRequest, slug: str | None = None) -> HttpResponse:
    project = _project(request, slug) if slug else None
    context = _queue(request, project, request.GET)
    return render(request, _part(request, "review/queue.html", "results"), context)


QUEUE_ORDERS = [("newest", "Newest first"), ("least-confident", "Least confident first")]


@dataclass
class QueuePage:
    """A page of the queue, keyset-paged: it starts after a row (``after``), so a page
    never skips a memory however many left the queue meanwhile."""

    object_list: list[Memory]
    count: int  # memories waiting, in all
    after: str  # where this page starts ("" for the first)
    next_after: str | None

    def __iter__(self) -> Any:
        return iter(self.object_list)

    def __len__(self) -> int:
        return len(self.object_list)


def _sort_key(order: str, memory: Memory) -> list[Any]:
    if order == "least-confident":
        return [memory.confidence, memory.pk]
    return [memory.created_at.isoformat(), memory.pk]


def _after(order: str, cursor: str) -> Q | None:
    """The rows after ``cursor`` in ``order``; None for a cursor that is not one of ours."""
    try:
        kind, value, pk = signing.loads(cursor, salt="review-queue")
        if kind != order:
            return None
        if order == "least-confident":
            return Q(confidence__gt=float(value)) | Q(confidence=float(value), pk__lt=int(pk))
        moment = datetime.fromisoformat(value)
        return Q(created_at__lt=moment) | Q(created_at=moment, pk__lt=int(pk))
    except (signing.BadSignature, TypeError, ValueError):
        return None


def _queue(request: HtmxHttpRequest, project: Project | None, params: Any) -> dict[str, Any]:
    """The context of the queue page (and of its refill after an action)."""
    order = params.get("order", "newest")
    if order not in selectors.REVIEW_ORDERS:
        order = "newest"
    waiting = selectors.memories_for_review(
        project=project,
        order=order,
        within=roles.projects_for(request.user),
        reader=Actor.for_user(request.user) if roles.role_in(request.user, None) else None,
    )
    only_global = project is None and params.get("scope") == "global"
    if only_global:
        waiting = waiting.filter(project__isnull=True)
    cursor = params.get("after", "")
    start = _after(order, cursor) if cursor else None
    if start is None:
        cursor = ""
    rows = list((waiting.filter(start) if start is not None else waiting)[: PAGE_SIZE + 1])
    more = len(rows) > PAGE_SIZE
    rows = rows[:PAGE_SIZE]
    page = QueuePage(
        object_list=rows,
        count=waiting.count(),
        after=cursor,
        next_after=signing.dumps([order, *_sort_key(order, rows[-1])], salt="review-queue")
        if more
        else None,
    )
    _flag(page.object_list)
    return {
        "project": project,
        "page": page,
        "order": order,
        "orders": QUEUE_ORDERS,
        "scope": "global" if only_global else "",
        "view": "queue",
        "is_reviewer": _is_reviewer(request, project.pk)
        if project
        else _reviews_all_it_sees(request),
    }


@require_GET
@login_required
def memory_list(request: HtmxHttpRequest, slug: str) -> HttpResponse:
    project = _project(request, slug)
    filters = MemoryListFilter(
        request.GET or None, queryset=selectors.memory_rows(project.memories.all())
    )
    queryset = filters.qs if filters.is_bound else filters.queryset.order_by("-created_at", "-id")
    page = _page(request, queryset)
    _flag(page.object_list)
    query = request.GET.copy()
    query.pop("page", None)
    return render(
        request,
        _part(request, "review/memories.html", "results"),
        {
            "project": project,
            "filters": filters,
            "page": page,
            "query": query.urlencode(),
            "view": "list",
            "is_reviewer": _is_reviewer(request, project.pk),
        },
    )


@require_GET
@login_required
def memory_detail(request: HtmxHttpRequest, pk: int) -> HttpResponse:
    memory = get_object_or_404(
        Memory.objects.defer("search_vector", "match_keys").select_related(
            "project", "source_run", "approved_by", "merged_into"
        ),
        pk=pk,
    )
    _may_read(request, memory)
    history = list(selectors.memory_history(memory_id=memory.pk)[:HISTORY_SHOWN])
    points = selectors.confidence_over_time(memory=memory, history=history)
    _name_approvers(history)
    return render(
        request,
        "review/memory.html",
        {
            "memory": memory,
            "history": history,
            "given": selectors.memory_runs(memory_id=memory.pk),
            "chart": _chart(points),
            "points": points,
            "is_reviewer": _is_reviewer(request, _owner(memory)),
            "view": "detail",
        },
    )


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
    project = _project(request, slug, Project.objects.select_related("policy"))
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
        _part(request, "review/preview.html", "results"),
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


RUN_STATUSES = [
    ("", "any"),
    ("running", "running"),
    ("succeeded", "succeeded"),
    ("failed", "failed"),
]


@require_GET
@login_required
def runs(request: HtmxHttpRequest, slug: str) -> HttpResponse:
    project = _project(request, slug)
    status = request.GET.get("status", "")
    text = request.GET.get("q", "").strip()[:200]
    found = selectors.runs_recent(project=project)
    if status in {value for value, _ in RUN_STATUSES if value}:
        found = found.filter(status=status)
    else:
        status = ""
    if text:
        found = found.filter(Q(external_id__icontains=text) | Q(task_title__icontains=text))
    query = QueryDict(mutable=True)
    query.update({k: v for k, v in {"status": status, "q": text}.items() if v})
    return render(
        request,
        "review/runs.html",
        {
            "project": project,
            "page": _page(request, found, RUNS_PAGE_SIZE),
            "status": status,
            "statuses": RUN_STATUSES,
            "q": text,
            "query": query.urlencode(),
        },
    )


@require_GET
@login_required
def run_detail(request: HtmxHttpRequest, slug: str, pk: int) -> HttpResponse:
    """A run: what it was given (rank, score) and what its outcome did to each memory's
    confidence (from their history)."""
    project = _project(request, slug)
    run = get_object_or_404(Run.objects.filter(project=project), pk=pk)
    given = list(
        run.given.select_related("memory")
        .only(
            "rank", "score", "memory__id", "memory__type", "memory__content", "memory__confidence"
        )
        .order_by("rank")
    )
    moved = {
        event.memory_id: event.changes.get("confidence")
        for event in MemoryEvent.objects.filter(run=run, action="outcome").only(
            "memory_id", "changes"
        )
    }
    rows = [{"given": g, "moved": moved.get(g.memory_id)} for g in given]
    return render(request, "review/run.html", {"project": project, "run": run, "rows": rows})


# --- actions ----------------------------------------------------------------------------------

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
    actor = _reviewer(request, [_owner(memory)])
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
    actor = _reviewer(request, [_owner(memory) for memory in chosen])
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
    actor = _reviewer(request, [_owner(memory)])
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
    context = {"memory": memory, "form": form, "view": view, "next": _back(request, "")}
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
    _may_read(request, memory)
    return render(
        request,
        f"{ROWS}#row",
        {
            "memory": memory,
            "view": request.GET.get("view", "list"),
            "is_reviewer": _is_reviewer(request, _owner(memory)),
        },
    )


def _after_change(request: HtmxHttpRequest, ids: Sequence[int]) -> HttpResponse:
    """Back to the page without JavaScript; with htmx, the changed rows (a row that left
    the queue is removed) and the messages, out of band."""
    view = request.POST.get("view", "list")
    if not request.htmx:
        return HttpResponseRedirect(_back(request, reverse("review:queue")))
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
                "next": _back(request, ""),
            },
            request=request,
        )
        for pk in ids
    ]
    parts.append(
        render_to_string(
            f"{ROWS}#messages",
            {"oob": True, "view": view, "next_url": _back(request, "")},
            request=request,
        )
    )
    return HttpResponse("".join(parts))


def _refill(request: HtmxHttpRequest) -> HttpResponse:
    """The queue's page again after an action, as it now is: what left it is gone, the
    page refills from the rows after it, the counts are the new ones, nothing is skipped."""
    page_url = _back(request, reverse("review:queue"))
    parts = urlsplit(page_url)
    try:
        match = resolve(parts.path)
    except Http404:
        match = resolve(reverse("review:queue"))
    slug = match.kwargs.get("slug")
    project = _project(request, slug) if slug else None
    context = _queue(request, project, QueryDict(parts.query))
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
        memory.pk: _owner(memory)
        for memory in Memory.objects.filter(pk__in=events.values("memory_id")).only(
            "id", "project", "scope"
        )
    }
    actor = _reviewer(request, owners.values())
    result = services.memories_undo(event_ids=wanted, actor=actor)
    if result.undone:
        messages.success(request, f"Undone: {_count(result.undone)} as before.")
    for memory_id, why in result.refused[:5]:
        messages.warning(request, f"Memory {memory_id} was not put back: {why}.")
    if not result.undone and not result.refused:
        messages.info(request, "Nothing to undo.")
    return _after_change(request, result.undone)


# --- repeats and conflicts -------------------------------------------------------------------

PAIR_STATUSES = {"open": "Open", "dismissed": "Judged compatible", "resolved": "Resolved"}


@require_GET
@login_required
def conflicts(request: HtmxHttpRequest, slug: str | None = None) -> HttpResponse:
    """The pairs of a project (or of every project) that repeat or may contradict each
    other, open ones first by default, each with both memories side by side."""
    project = _project(request, slug) if slug else None
    wanted = request.GET.get("status", "open")
    if wanted not in PAIR_STATUSES:
        wanted = "open"
    if project is not None:
        pairs = MemoryPair.objects.filter(project=project)
    else:
        seen = Q(project__in=roles.projects_for(request.user))
        if roles.role_in(request.user, None) is not None:
            seen |= Q(project__isnull=True)
        pairs = MemoryPair.objects.filter(seen)
    pairs = (
        queries.open_pairs(pairs) if wanted == "open" else pairs.filter(status=wanted)
    ).order_by("-created_at", "-id")
    page = _page(request, pairs)
    memories = decisions.pair_memories(list(page.object_list))
    return render(
        request,
        _part(request, "review/conflicts.html", "results"),
        {
            "project": project,
            "page": page,
            "rows": [
                {
                    "pair": pair,
                    "first": memories.get(pair.first_id),
                    "second": memories.get(pair.second_id),
                }
                for pair in page.object_list
            ],
            "status": wanted,
            "statuses": PAIR_STATUSES,
            "query": f"status={wanted}",
            "is_reviewer": _is_reviewer(request, project.pk)
            if project
            else _reviews_all_it_sees(request),
        },
    )


@require_GET
@login_required
def conflict_detail(request: HtmxHttpRequest, pk: int) -> HttpResponse:
    pair = get_object_or_404(MemoryPair.objects.select_related("project"), pk=pk)
    _may_see(request, pair.project_id)
    sides = queries.pair_sides(pair)
    best = max((side.memory for side in sides), key=decisions.precedence, default=None)
    return render(
        request,
        "review/conflict.html",
        {
            "pair": pair,
            "project": pair.project,
            "sides": sides,
            "merged_text": best.content if best else "",
            "is_reviewer": _is_reviewer(request, pair.project_id),
        },
    )


@require_POST
@login_required
def conflict_action(request: HtmxHttpRequest, pk: int) -> HttpResponse:
    """Decide a pair: keep one, merge, keep both (dismiss) or reject one."""
    pair = get_object_or_404(MemoryPair, pk=pk)
    actor = _reviewer(request, [pair.project_id])
    action = request.POST.get("action", "")
    raw = request.POST.get("memory", "")
    memory_id = int(raw) if is_whole_number(raw) and len(raw) <= 18 else None
    back = _back(request, reverse("review:conflict", args=[pair.pk]))
    try:
        decided = decisions.pair_resolve(
            pair_id=pair.pk,
            action=action,
            actor=actor,
            memory_id=memory_id,
            content=request.POST.get("content") if action == "merge" else None,
            reason=request.POST.get("reason", ""),
        )
    except (ValidationError, services.Conflict) as error:
        messages.error(request, _problem(error))
        return HttpResponseRedirect(back)
    messages.success(request, _decided(decided))
    if decided.resolution == "merged" and decided.outcome_memory_id:
        return HttpResponseRedirect(reverse("review:memory", args=[decided.outcome_memory_id]))
    return HttpResponseRedirect(back)


@require_POST
@login_required
def conflict_bulk(request: HtmxHttpRequest) -> HttpResponse:
    action = request.POST.get("action", "")
    ids = [int(v) for v in request.POST.getlist("ids") if is_whole_number(v) and len(v) <= 18]
    back = _back(request, reverse("review:conflicts"))
    if action not in ("dismiss", "keep-newer", "keep-older") or not ids:
        Actor.for_user(request.user)
        messages.error(request, "Select one or more pairs, then choose what to do with them.")
        return HttpResponseRedirect(back)
    chosen = MemoryPair.objects.filter(pk__in=ids).values_list("project_id", flat=True)
    actor = _reviewer(request, list(chosen))
    done, failed = decisions.pairs_resolve(pair_ids=ids, action=action, actor=actor)
    messages.success(request, f"Decided {len(done)} pair{'' if len(done) == 1 else 's'}.")
    for pair_id, why in failed[:5]:
        messages.warning(request, f"Pair {pair_id}: {why}")
    return HttpResponseRedirect(back)


def _decided(pair: MemoryPair) -> str:
    outcome = pair.outcome_memory_id
    return {
        "kept": f"Kept memory {outcome}; the other is superseded by it (restorable).",
        "merged": f"Merged into memory {outcome}; both are superseded by it (restorable).",
        "not_conflict": "Kept both: this pair is not flagged again unless their words change.",
        "rejected": f"Rejected memory {outcome}.",
    }.get(pair.resolution, "Decided.")


def _problem(error: Exception) -> str:
    if isinstance(error, ValidationError):
        return " ".join(error.messages)
    return str(error)


def _flag(memories: Iterable[Memory]) -> None:
    """Mark each memory of a page with its open pairs ("repeats #12"), in one query."""
    rows = list(memories)
    flags = queries.pair_flags([memory.pk for memory in rows])
    for memory in rows:
        memory.flags = flags.get(memory.pk, [])  # type: ignore[attr-defined]


# --- helpers ----------------------------------------------------------------------------------


def _undo(result: services.ChangeResult) -> str:
    """The message's tag that offers to undo a change: its history rows (review_tags)."""
    return f"undo:{','.join(str(event.pk) for event in result.events)}" if result.events else ""


def _quote(content: str, length: int = 60) -> str:
    return f"“{content[:length]}{'…' if len(content) > length else ''}”"


def _count(items: Iterable[object]) -> str:
    count = len(list(items))
    return f"{count} memor{'y' if count == 1 else 'ies'}"


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


def _name_approvers(history: Sequence[MemoryEvent]) -> None:
    """History keeps the approver as a user id: show their name (one query)."""
    ids = {
        value
        for event in history
        for value in (event.changes or {}).get("approved_by") or []
        if isinstance(value, int)
    }
    if not ids:
        return
    names = dict(get_user_model().objects.filter(pk__in=ids).values_list("pk", "username"))
    for event in history:
        change = (event.changes or {}).get("approved_by")
        if change:
            event.changes = {
                **event.changes,
                "approved_by": [names.get(v, v) if isinstance(v, int) else v for v in change],
            }


@dataclass(frozen=True)
class Chart:
    """Confidence over time as an SVG draws it: points with their values, a time axis and
    a 0-1 value axis (plot area ``width`` x ``height`` inside margins)."""

    width: int
    height: int
    line: str
    points: list[dict[str, Any]]
    x_ticks: list[dict[str, Any]]
    y_ticks: list[dict[str, Any]]


def _chart(
    points: Sequence[tuple[Any, float]], width: int = 600, height: int = 120
) -> Chart | None:
    if not points:
        return None
    first, last = points[0][0].timestamp(), points[-1][0].timestamp()
    span = max(last - first, 1.0)

    def x(moment: Any) -> float:
        return round((moment.timestamp() - first) / span * width, 1)

    def y(value: float) -> float:
        return round((1 - value) * height, 1)

    marks = [
        {"x": x(moment), "y": y(value), "value": f"{value:.2f}", "when": moment}
        for moment, value in points
    ]
    middle = points[0][0] + (points[-1][0] - points[0][0]) / 2
    moments = [points[0][0], middle, points[-1][0]] if last > first else [points[0][0]]
    return Chart(
        width=width,
        height=height,
        line=" ".join(f"{mark['x']},{mark['y']}" for mark in marks),
        points=marks,
        x_ticks=[{"x": x(m), "label": m} for m in moments],
        y_ticks=[{"y": y(v), "label": f"{v:.1f}"} for v in (0.0, 0.3, 0.5, 1.0)],
    )
