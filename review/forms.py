"""The review pages' forms: list filters, inline edits and the context preview."""

from __future__ import annotations

from typing import Any

import django_filters
from django import forms
from django.conf import settings
from django.contrib.postgres.search import SearchQuery
from django.db.models import QuerySet

from assembly.packing import LODS
from memories.models import Memory, MemoryType, ReviewStatus, Source, Tier

# Each kept in order by an index of the project's memories (memory_list_*), one way, ties
# by id: a page of any of them is an index range (memories.keyset). Memories without an
# expiry come after every one with one.
SORTS = {
    "newest": ("-created_at", "-id"),
    "oldest": ("created_at", "id"),
    "confidence": ("-confidence", "-id"),
    "least-confident": ("confidence", "id"),
    "expiry": ("expires_at", "id"),
    "recently-changed": ("-updated_at", "-id"),
}
YES_NO = [("yes", "yes"), ("no", "no")]


class MemoryListFilter(django_filters.FilterSet):
    """The project memories page's filters and sort, all in the URL."""

    type = django_filters.ChoiceFilter(choices=MemoryType.choices, empty_label="any")
    source = django_filters.ChoiceFilter(choices=Source.choices, empty_label="any")
    review = django_filters.ChoiceFilter(
        field_name="review_status", choices=ReviewStatus.choices, empty_label="any"
    )
    active = django_filters.ChoiceFilter(choices=YES_NO, empty_label="any", method="filter_active")
    tier = django_filters.ChoiceFilter(choices=Tier.choices, empty_label="any")
    tag = django_filters.CharFilter(
        method="filter_tag", max_length=settings.MEMORY_TAG_MAX_CHARS, label="Tag (exact)"
    )
    stale = django_filters.ChoiceFilter(
        choices=YES_NO, empty_label="any", method="filter_stale", label="Flagged stale"
    )
    q = django_filters.CharFilter(method="filter_text", max_length=200, label="Text")
    sort = django_filters.ChoiceFilter(
        choices=[(name, name.replace("-", " ")) for name in SORTS],
        empty_label=None,
        method="filter_sort",
        label="Sort by",
    )

    class Meta:
        model = Memory
        fields: list[str] = []

    def filter_active(self, queryset: QuerySet[Memory], name: str, value: str) -> QuerySet[Memory]:
        return queryset.filter(active=value == "yes") if value else queryset

    def filter_stale(self, queryset: QuerySet[Memory], name: str, value: str) -> QuerySet[Memory]:
        """Flagged for re-review (by a code change or an agent's flag) and not reviewed since."""
        if not value:
            return queryset
        return queryset.filter(stale_at__isnull=value == "no")

    def filter_tag(self, queryset: QuerySet[Memory], name: str, value: str) -> QuerySet[Memory]:
        value = value.strip()
        return queryset.filter(tags__contains=[value]) if value else queryset

    def filter_text(self, queryset: QuerySet[Memory], name: str, value: str) -> QuerySet[Memory]:
        if not value.strip():
            return queryset
        query = SearchQuery(value, search_type="websearch", config="english")
        return queryset.filter(search_vector=query)

    def filter_sort(self, queryset: QuerySet[Memory], name: str, value: str) -> QuerySet[Memory]:
        return queryset  # the page sorts, by keyset (``sort``)

    @property
    def order_name(self) -> str:
        """The order asked for; newest first when none (or no valid one) is."""
        if self.is_bound and self.is_valid():
            return self.form.cleaned_data.get("sort") or "newest"
        return "newest"


class MemoryEditForm(forms.Form):
    """What a reviewer edits inline: the words, the tags, the type."""

    content = forms.CharField(widget=forms.Textarea(attrs={"rows": 3}), strip=True)
    tags = forms.CharField(
        required=False, help_text="Comma-separated keywords and path globs (src/core/**)."
    )
    type = forms.ChoiceField(choices=MemoryType.choices)

    @classmethod
    def for_memory(cls, memory: Memory) -> MemoryEditForm:
        return cls(
            initial={"content": memory.content, "tags": ", ".join(memory.tags), "type": memory.type}
        )

    def changes(self) -> dict[str, Any]:
        data = self.cleaned_data
        tags = [tag.strip() for tag in data["tags"].split(",") if tag.strip()]
        return {"content": data["content"], "tags": tags, "type": data["type"]}


class PreviewForm(forms.Form):
    """What an agent would ask: its write scope, its intent, its token budget."""

    write_scope = forms.CharField(
        required=False,
        label="Write scope",
        help_text="Paths and globs the task will change, one per line or comma-separated.",
        widget=forms.Textarea(attrs={"rows": 2}),
    )
    intent = forms.CharField(
        required=False, max_length=2000, help_text="What the agent is about to do."
    )
    token_budget = forms.IntegerField(
        label="Token budget", min_value=1, max_value=200_000, initial=1000
    )
    lod = forms.ChoiceField(
        label="Detail", choices=[(lod, lod) for lod in LODS], initial="atomic", required=False
    )
    limit = forms.IntegerField(
        label="Limit",
        min_value=1,
        max_value=1000,
        required=False,
        help_text="At most this many memories are given (empty: the project's policy).",
    )

    def write_scope_entries(self) -> tuple[str, ...]:
        raw = self.cleaned_data["write_scope"].replace(",", "\n")
        return tuple(entry.strip() for entry in raw.splitlines() if entry.strip())
