"""What keeps an admin list as fast at a million rows as at a thousand (DESIGN.md 6g): a count
that is the planner's estimate past a bound, pages whose rows are found by id first, and a
project filter that lists a bounded number of projects.

A list over a large table sets ``paginator = EstimatedCountPaginator``, orders by an index
(``ordering`` and ``sortable_by``) and filters projects with ``ProjectFilter``.
"""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.core.paginator import EmptyPage, Page, Paginator
from django.db.models import Model, QuerySet
from django.http import HttpRequest
from django.utils.functional import cached_property

from memories import roles
from memories.counting import Tally, count_up_to
from memories.models import Project
from memories.text import as_id, is_whole_number

# Up to this many rows a list is counted exactly (reading at most this many rows); past it
# the count is the planner's estimate, shown as "about ...". As the review lists' bound
# (LIST_COUNT_BOUND): counting ten thousand matches of a search was most of its page.
EXACT_COUNT_BOUND = 1_000
# The projects a project filter lists (by name); any other is reached by its id or slug.
PROJECT_CHOICES = 20


class EstimatedCountPaginator(Paginator):
    """Counts a list up to ``EXACT_COUNT_BOUND`` rows (with a LIMIT); a list that reaches
    it is counted as the planner's estimate (``estimated`` is set, ``count_label`` says
    "about"), or as "1,000+" where the planner guesses fewer. A page reads the ids of its
    rows first (an index-only walk over the skipped ones), then the rows of those ids: page
    500 costs 25,000 index entries, not 25,000 rows.
    """

    estimated = False

    @cached_property
    def tally(self) -> Tally:
        rows = self.object_list
        if not isinstance(rows, QuerySet):
            return Tally(super().count)
        return count_up_to(rows, EXACT_COUNT_BOUND, estimate=True)

    @property
    def count(self) -> int:
        self.estimated = self.tally.more
        return self.tally.value

    @property
    def count_label(self) -> str:
        return str(self.tally)

    def validate_number(self, number: Any) -> int:
        # Past an estimate the rows may go on (or end sooner): a page beyond it is served,
        # empty if there is nothing there.
        if not self.count or not self.estimated:
            return super().validate_number(number)
        try:
            return super().validate_number(number)
        except EmptyPage:
            if int(number) < 1:
                raise
            return int(number)

    def page(self, number: Any) -> Page:
        number = self.validate_number(number)
        rows = self.object_list
        if not isinstance(rows, QuerySet):
            return super().page(number)
        bottom = (number - 1) * self.per_page
        top = bottom + self.per_page
        # The same filters and order again, over at most one page of ids: the planner joins
        # the page's ids to the rows by primary key.
        on_page = rows.filter(pk__in=rows.values("pk")[bottom:top])
        return Page(on_page, number, self)


class ProjectFilter(admin.SimpleListFilter):
    """The project of a row, by id or slug (``?project__id__exact=12``, as Django's own
    filter names it). It lists at most ``PROJECT_CHOICES`` projects by name, of those the
    person may see, and the chosen one: on an install of a thousand projects a list of every
    one is a page of its own (and would name projects the person has no role in). Any
    project's rows are a click away on the projects' list (its "memories" link)."""

    title = "project"
    parameter_name = "project__id__exact"
    template = "admin/memories/project_filter.html"

    def __init__(
        self, request: HttpRequest, params: Any, model: type[Model], model_admin: Any
    ) -> None:
        self.project_field = getattr(model_admin, "project_field", "project")
        self.nullable = bool(getattr(model._meta.get_field(self.project_field), "null", False))
        super().__init__(request, params, model, model_admin)
        # What the template's own box sends again beside the project it asks for.
        self.other_params = [
            (name, value)
            for name, value in request.GET.items()
            if name not in {self.parameter_name, "p", "e"}
        ]

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        visible = (
            Project.objects.all() if request.user.is_superuser else roles.projects_for(request.user)
        )
        listed = list(visible.order_by("name").values_list("pk", "name")[:PROJECT_CHOICES])
        chosen = self.value()
        if chosen and chosen != "none" and all(str(pk) != chosen for pk, _ in listed):
            listed += list(self._chosen(visible, chosen).values_list("pk", "name"))
        choices = [(str(pk), name) for pk, name in listed]
        if self.nullable:
            choices.append(("none", "no project (global)"))
        return choices

    def value(self) -> str | None:
        value = super().value()
        # NUL is no character of a slug (and PostgreSQL refuses it in a query).
        return value.strip().replace("\x00", "") if isinstance(value, str) else value

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        chosen = self.value()
        if not chosen:
            return queryset
        if chosen == "none":
            return queryset.filter(**{f"{self.project_field}__isnull": True})
        project_id = as_id(chosen)
        if project_id is not None:
            return queryset.filter(**{f"{self.project_field}_id": project_id})
        if is_whole_number(chosen):
            return queryset.none()  # a number too large to be an id
        return queryset.filter(**{f"{self.project_field}__slug": chosen})

    @staticmethod
    def _chosen(projects: QuerySet[Project], chosen: str) -> QuerySet[Project]:
        project_id = as_id(chosen)
        return (
            projects.filter(pk=project_id)
            if project_id is not None
            else projects.filter(slug=chosen)
        )
