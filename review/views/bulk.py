"""Bulk edits of every memory a list matches, not only a page's selection: a project's
memories list with its filters, or a review queue. The page says how many match (counted
up to the cap), the reviewer picks the change, and a background job
(memories.services.bulk) makes it; its page shows the progress, polled by htmx while it
runs, and offers one Undo for the whole job once it is done.

Who: reviewers of every memory the list matches. A filter of a project's list only matches
that project's memories; a queue of every project is offered to those who review every
project they see (as its selection buttons are); anything else is refused by the service,
never skipped silently.
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied, ValidationError
from django.db.models import QuerySet
from django.http import Http404, HttpResponse, HttpResponseRedirect
from django.shortcuts import get_object_or_404, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from memories import roles, selectors
from memories.actors import Actor
from memories.models import BulkAction, BulkEdit, ItemState, Memory, Project, Role
from memories.services import bulk
from review.forms import MemoryListFilter
from review.views.access import is_reviewer, reviews_all_it_sees, visible_project
from review.views.parts import HtmxHttpRequest, template_for

# What a person may ask of a whole list (an undo is asked of a job).
CHOICES = [
    (BulkAction.APPROVE, "Approve"),
    (BulkAction.ARCHIVE, "Archive (restorable)"),
    (BulkAction.EXPIRE, "Expire now"),
    (BulkAction.PIN, "Pin"),
    (BulkAction.UNPIN, "Unpin"),
    (BulkAction.RETAG, "Change tags"),
    (BulkAction.SET_TIER, "Change tier"),
]
FAILURES_SHOWN = 20


class BulkEditForm(forms.Form):
    action = forms.ChoiceField(choices=CHOICES, widget=forms.RadioSelect, label="Change")
    add = forms.CharField(
        required=False, label="Tags to add", help_text="Comma-separated (for Change tags)."
    )
    remove = forms.CharField(
        required=False, label="Tags to remove", help_text="Comma-separated (for Change tags)."
    )
    tier = forms.ChoiceField(
        required=False,
        choices=[("", "—"), ("hot", "hot"), ("warm", "warm"), ("cold", "cold")],
        help_text="For Change tier.",
    )

    def parameters(self) -> dict[str, Any]:
        data = self.cleaned_data
        if data["action"] == BulkAction.RETAG:
            return {"add": data["add"], "remove": data["remove"]}
        if data["action"] == BulkAction.SET_TIER:
            return {"tier": data["tier"]}
        return {}


def _listed(
    request: HtmxHttpRequest, source: str, slug: str | None
) -> tuple[Project | None, QuerySet[Memory], str, str, list[str]]:
    """The list a bulk edit covers: its project, its memories, how it reads, where it is
    (the list's URL), and what is wrong with its filter."""
    project = visible_project(request, slug) if slug else None
    params = request.GET
    if source == "memories":
        assert project is not None
        filters = MemoryListFilter(params or None, queryset=project.memories.all())
        errors = [f"{name}: {' '.join(problems)}" for name, problems in filters.errors.items()]
        matched = filters.qs if filters.is_bound and not errors else filters.queryset
        described = ", ".join(
            f"{name} {value}"
            for name, value in (filters.form.cleaned_data if filters.is_bound else {}).items()
            if value and name != "sort"
        )
        back = reverse("review:memories", args=[project.slug])
        return project, matched, described or "every memory", back, errors
    scope_global = project is None and params.get("scope") == "global"
    waiting = selectors.memories_for_review(
        project=project,
        within=roles.projects_for(request.user),
        reader=Actor.for_user(request.user) if roles.role_in(request.user, None) else None,
    )
    if scope_global:
        waiting = waiting.filter(project__isnull=True)
    back = (
        reverse("review:project-queue", args=[project.slug]) if project else reverse("review:queue")
    )
    described = "the review queue" + (" of global memories" if scope_global else "")
    return project, waiting, described, back, []


def _may_edit(request: HtmxHttpRequest, project: Project | None) -> bool:
    if project is not None:
        if not is_reviewer(request, project.pk):
            raise PermissionDenied("Only the project's reviewers may change its memories.")
        return True
    return reviews_all_it_sees(request) and bool(
        roles.projects_for(request.user, Role.REVIEWER).exists()
        or roles.may(request.user, None, Role.REVIEWER)
    )


@require_http_methods(["GET", "POST"])
@login_required
def bulk_edit(request: HtmxHttpRequest, source: str, slug: str | None = None) -> HttpResponse:
    """Every memory the list matches: how many, and the change to make to all of them."""
    project, matched, described, back, errors = _listed(request, source, slug)
    allowed = _may_edit(request, project)
    form = BulkEditForm(request.POST if request.method == "POST" else None)
    if request.method == "POST" and allowed and not errors and form.is_valid():
        try:
            job = bulk.bulk_edit_start(
                memories=matched,
                action=form.cleaned_data["action"],
                actor=Actor.for_user(request.user),
                project=project,
                parameters=form.parameters(),
                described=described,
            )
        except ValidationError as error:
            for field, problems in _by_field(error).items():
                form.add_error(field if field in form.fields else None, problems)
        except PermissionDenied as error:
            form.add_error(None, str(error))
        else:
            messages.success(request, f"Bulk edit #{job.pk} started over {job.total:,} memories.")
            return HttpResponseRedirect(reverse("review:bulk-job", args=[job.pk]))
    cap = settings.BULK_EDIT_MAX_MEMORIES
    count = matched.order_by()[: cap + 1].count() if not errors else 0
    query = request.GET.urlencode()
    return render(
        request,
        "review/bulk_edit.html",
        {
            "project": project,
            "source": source,
            "described": described,
            "back": _with_query(back, query),
            "query": query,
            "count": count,
            "cap": cap,
            "over_cap": count > cap,
            "errors": errors,
            "form": form,
            "allowed": allowed,
            "view": "bulk",
        },
    )


def _with_query(url: str, query: str) -> str:
    return f"{url}?{query}" if query else url


def _by_field(error: ValidationError) -> dict[str, list[str]]:
    if hasattr(error, "error_dict"):
        return {field: list(problems) for field, problems in error.message_dict.items()}
    return {"__all__": error.messages}


def _visible_job(request: HtmxHttpRequest, pk: int) -> BulkEdit:
    """A 404 unless the person started the job or may see what it covers."""
    job = get_object_or_404(BulkEdit.objects.select_related("project", "undo_of"), pk=pk)
    if job.actor_id == request.user.pk:
        return job
    if job.project_id is not None and roles.may(request.user, job.project_id, Role.VIEWER):
        return job
    # A job over several projects (or the global memories): what it changed, and why some
    # failed, is shown only to someone who reviews every one of them.
    if job.project_id is None and bulk.reviews_every_owner(Actor.for_user(request.user), job):
        return job
    raise Http404("Nothing here, or nothing you have a role in.")


def _may_undo(request: HtmxHttpRequest, job: BulkEdit) -> bool:
    if job.project_id is not None:
        return is_reviewer(request, job.project_id)
    return job.actor_id == request.user.pk


def _undoable(request: HtmxHttpRequest, job: BulkEdit) -> bool:
    return (
        job.action != BulkAction.UNDO
        and job.finished
        and job.changed > 0
        and not BulkEdit.objects.filter(undo_of=job).exists()
        and _may_undo(request, job)
    )


@require_GET
@login_required
def bulk_job(request: HtmxHttpRequest, pk: int) -> HttpResponse:
    """A job's progress: polled every two seconds while it is queued or running."""
    job = _visible_job(request, pk)
    failures = (
        job.items.filter(state=ItemState.FAILED).order_by("memory_id")[:FAILURES_SHOWN]
        if job.failed
        else []
    )
    return render(
        request,
        template_for(request, "review/job.html", "job"),
        {
            "job": job,
            "project": job.project,
            "failures": failures,
            "undo": job.undone_by.first(),
            "undoable": _undoable(request, job),
            "view": "job",
        },
    )


@require_POST
@login_required
def bulk_job_undo(request: HtmxHttpRequest, pk: int) -> HttpResponse:
    """One undo of the whole job, as a job of its own; a second is refused."""
    job = _visible_job(request, pk)
    if not _may_undo(request, job):
        raise PermissionDenied(
            "Only the project's reviewers (for a job over several projects, the person who"
            " started it) may undo it."
        )
    try:
        undo = bulk.bulk_edit_undo(job=job, actor=Actor.for_user(request.user))
    except ValidationError as error:
        messages.error(request, " ".join(error.messages))
        return HttpResponseRedirect(reverse("review:bulk-job", args=[job.pk]))
    messages.success(request, f"Undoing bulk edit #{job.pk}: {undo.total:,} memories go back.")
    return HttpResponseRedirect(reverse("review:bulk-job", args=[undo.pk]))
