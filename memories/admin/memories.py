"""Operators' bulk edits of memories, and their history. Every change goes through
memories.services, so history is kept.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

from django import forms
from django.contrib import admin, messages
from django.contrib.admin.helpers import ACTION_CHECKBOX_NAME
from django.contrib.postgres.search import SearchQuery
from django.core.exceptions import PermissionDenied, ValidationError
from django.db.models import Q, QuerySet
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils import timezone
from django.utils.html import format_html, format_html_join

from memories import selectors, services
from memories.actors import Actor
from memories.admin.access import ByProjectRole, ReadOnly, require_role
from memories.admin.bulk import BULK_ACTIONS
from memories.admin.lists import EstimatedCountPaginator, ProjectFilter
from memories.models import Memory, MemoryEvent, MemoryType, Role, Scope
from memories.services.validation import secrets_mode, text_fields
from memories.text import as_id, is_whole_number

EXPIRY_EXTENSION_DAYS = 30


def _memory_owners(queryset: QuerySet[Memory]) -> list[int | None]:
    rows = queryset.values_list("project_id", "scope")
    return [None if scope == Scope.GLOBAL else project_id for project_id, scope in rows]


class ExpiringSoonFilter(admin.SimpleListFilter):
    title = "expiry"
    parameter_name = "expiring"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [("7", "within 7 days"), ("30", "within 30 days"), ("expired", "already expired")]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Memory]) -> QuerySet[Memory]:
        now = timezone.now()
        if self.value() == "expired":
            return queryset.filter(expires_at__lte=now)
        if self.value() in {"7", "30"}:
            horizon = now + timedelta(days=int(self.value() or 0))
            return queryset.filter(expires_at__gt=now, expires_at__lte=horizon)
        return queryset


class _CheckedText(forms.ModelForm):
    """What the store would refuse in the text (a secret, in any disguise, under the
    project's policy; empty content) as form errors, by the service's own check: the admin
    saves only in ``save_model``, where an error could no longer be shown."""

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        if not self.errors and data.get("content") is not None:
            project = data.get("project", self.instance.project)
            text = {name: data.get(name) for name in ("content", "summary", "tags")}
            try:
                text_fields(secrets_mode(project), **text)
            except ValidationError as error:
                self.add_error(None, error)
        return data


class MemoryAddForm(_CheckedText):
    class Meta:
        model = Memory
        fields = [
            "project",
            "scope",
            "type",
            "source",
            "source_run",
            "content",
            "summary",
            "tags",
            "relevance_score",
            "expires_at",
        ]


class MemoryChangeForm(_CheckedText):
    class Meta:
        model = Memory
        fields = ["type", "content", "summary", "tags", "relevance_score", "expires_at"]


class ChangeTypeForm(forms.Form):
    type = forms.ChoiceField(choices=MemoryType.choices)


def _bulk_action(
    description: str, apply: Callable[[list[int], Actor], services.ChangeResult]
) -> Callable[..., None]:
    """An admin action that calls one service over the selected memories."""

    def action(modeladmin: MemoryAdmin, request: HttpRequest, queryset: QuerySet[Memory]) -> None:
        ids = list(queryset.values_list("id", flat=True))
        try:
            require_role(request, _memory_owners(queryset), Role.REVIEWER)
            result = apply(ids, Actor.for_user(request.user))
        except (PermissionDenied, ValidationError) as error:
            modeladmin.message_user(request, _error_text(error), messages.ERROR)
            return
        modeladmin.message_user(
            request,
            f"{description}: {len(result.changed)} changed, "
            f"{len(result.unchanged_ids)} already so.",
            messages.SUCCESS,
        )

    action.__name__ = description.lower().replace(" ", "_")
    return admin.action(description=description)(action)


def _error_text(error: Exception) -> str:
    if isinstance(error, ValidationError):
        return "; ".join(error.messages)
    return str(error)


@admin.register(Memory)
class MemoryAdmin(ByProjectRole):
    list_display = [
        "id",
        "short_content",
        "project",
        "type",
        "source",
        "confidence",
        "active",
        "review_status",
        "tier",
        "pinned",
        "expires_at",
    ]
    list_filter = [
        ProjectFilter,
        "type",
        "source",
        "active",
        "review_status",
        "tier",
        "pinned",
        "scope",
        ExpiringSoonFilter,
    ]
    list_select_related = ["project"]
    list_per_page = 50
    paginator = EstimatedCountPaginator
    show_full_result_count = False
    # Newest first by id, through the primary key (every project) or memory_project_id_unique
    # (one project); no other column has an index in the order of a whole list, so no other
    # header sorts.
    ordering = ["-id"]
    sortable_by = ["id"]
    # Searched by get_search_results (full text, a tag, an id), not by Django's icontains.
    search_fields = ["content"]
    search_help_text = (
        'Words of the active memories, as in a web search ("exact phrase", -without, or);'
        " a whole tag (src/core/**); #123 or 123 for memory 123. Inactive memories are"
        " searched with the filter Active: No (slower: they are not in the text index)."
    )
    autocomplete_fields = ["project"]
    raw_id_fields = ["source_run"]
    readonly_fields = [
        "confidence",
        "active",
        "review_status",
        "approved_by",
        "approved_at",
        "pinned",
        "tier",
        "token_count",
        "access_count",
        "last_accessed_at",
        "content_hash",
        "created_at",
        "updated_at",
        "history",
    ]
    actions = [
        _bulk_action(
            "Approve",
            lambda ids, actor: services.memories_approve(memory_ids=ids, actor=actor),
        ),
        _bulk_action(
            "Reject",
            lambda ids, actor: services.memories_reject(
                memory_ids=ids, actor=actor, reason="rejected in the admin"
            ),
        ),
        _bulk_action(
            "Activate",
            lambda ids, actor: services.memories_set_active(
                memory_ids=ids, active=True, actor=actor
            ),
        ),
        _bulk_action(
            "Deactivate",
            lambda ids, actor: services.memories_set_active(
                memory_ids=ids, active=False, actor=actor
            ),
        ),
        _bulk_action(
            "Pin",
            lambda ids, actor: services.memories_set_pinned(
                memory_ids=ids, pinned=True, actor=actor
            ),
        ),
        _bulk_action(
            "Unpin",
            lambda ids, actor: services.memories_set_pinned(
                memory_ids=ids, pinned=False, actor=actor
            ),
        ),
        _bulk_action(
            f"Extend expiry by {EXPIRY_EXTENSION_DAYS} days",
            lambda ids, actor: services.memories_extend_expiry(
                memory_ids=ids, days=EXPIRY_EXTENSION_DAYS, actor=actor
            ),
        ),
        _bulk_action(
            "Clear expiry",
            lambda ids, actor: services.memories_clear_expiry(memory_ids=ids, actor=actor),
        ),
        _bulk_action(
            "Restore archived",
            lambda ids, actor: services.memories_restore(memory_ids=ids, actor=actor),
        ),
        _bulk_action(
            "Restore original content",
            lambda ids, actor: services.memories_restore_content(memory_ids=ids, actor=actor),
        ),
        _bulk_action(
            "Promote run scratch",
            lambda ids, actor: services.memories_promote(memory_ids=ids, actor=actor),
        ),
        "change_type",
        "delete_with_history",
        # Over the whole filter ("Select all N"), as a background job with one undo.
        *BULK_ACTIONS,
    ]

    def global_rows(self, actor: Actor) -> Q:
        # A proposal not yet approved: global reviewers and its proposer only.
        return Q(selectors.global_readable(actor), project__isnull=True)

    def get_actions(self, request: HttpRequest) -> dict[str, Any]:
        actions = super().get_actions(request)
        # The stock delete bypasses the services; ours keeps the history.
        actions.pop("delete_selected", None)
        return actions

    def get_form(
        self, request: HttpRequest, obj: Memory | None = None, change: bool = False, **kwargs: Any
    ) -> Any:
        kwargs["form"] = MemoryChangeForm if obj else MemoryAddForm
        return super().get_form(request, obj, change, **kwargs)

    def get_readonly_fields(self, request: HttpRequest, obj: Memory | None = None) -> list[str]:
        if obj is None:
            return []
        return [*self.readonly_fields, "project", "scope", "source", "source_run"]

    def get_fields(self, request: HttpRequest, obj: Memory | None = None) -> Any:
        if obj is None:
            return list(MemoryAddForm.Meta.fields)
        return [
            "project",
            "scope",
            "source",
            "source_run",
            *MemoryChangeForm.Meta.fields,
            *self.readonly_fields,
        ]

    def get_search_results(
        self, request: HttpRequest, queryset: QuerySet[Memory], search_term: str
    ) -> tuple[QuerySet[Memory], bool]:
        """Words through the full-text index, a whole tag through the tags index, and an id
        (the indexes hold active memories only: the inactive ones are searched when the list
        is filtered to them)."""
        inactive = request.GET.get("active__exact") == "0"
        return memory_search(queryset, search_term, inactive=inactive), False

    def save_model(self, request: HttpRequest, obj: Memory, form: forms.ModelForm, change: bool):
        actor = Actor.for_user(request.user)
        data = form.cleaned_data
        if change:
            changed = {name: data[name] for name in form.changed_data}
            if changed:
                saved = services.memory_update(
                    memory=obj, actor=actor, reason="edited in the admin", **changed
                )
                obj.pk = saved.pk
            return
        saved = services.memory_create(
            project=data["project"],
            scope=data["scope"],
            type=data["type"],
            source=data["source"],
            source_run=data["source_run"],
            content=data["content"],
            summary=data["summary"] or None,
            tags=data["tags"],
            relevance_score=data["relevance_score"],
            expires_at=data["expires_at"],
            actor=actor,
        )
        obj.pk = saved.pk

    def delete_model(self, request: HttpRequest, obj: Memory) -> None:
        services.memories_delete(
            memory_ids=[obj.pk], actor=Actor.for_user(request.user), reason="deleted in the admin"
        )

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[Memory]) -> None:
        services.memories_delete(
            memory_ids=list(queryset.values_list("id", flat=True)),
            actor=Actor.for_user(request.user),
            reason="deleted in the admin",
        )

    @admin.action(description="Change type", permissions=["change"])
    def change_type(self, request: HttpRequest, queryset: QuerySet[Memory]) -> HttpResponse | None:
        form = ChangeTypeForm(request.POST if "apply" in request.POST else None)
        if form.is_valid():
            result = services.memories_change_type(
                memory_ids=list(queryset.values_list("id", flat=True)),
                type=form.cleaned_data["type"],
                actor=Actor.for_user(request.user),
            )
            self.message_user(
                request, f"Type changed on {len(result.changed)} memories.", messages.SUCCESS
            )
            return None
        return render(
            request,
            "admin/memories/change_type.html",
            {
                **self.admin_site.each_context(request),
                "title": "Change the type of the selected memories",
                "form": form,
                "memories": queryset,
                "opts": self.model._meta,
                "action_checkbox_name": ACTION_CHECKBOX_NAME,
            },
        )

    @admin.action(description="Delete (history is kept)", permissions=["delete"])
    def delete_with_history(self, request: HttpRequest, queryset: QuerySet[Memory]) -> None:
        self.delete_queryset(request, queryset)
        self.message_user(request, "Deleted; their history stays.", messages.SUCCESS)

    @admin.display(description="content")
    def short_content(self, obj: Memory) -> str:
        return obj.content if len(obj.content) <= 90 else obj.content[:89] + "…"

    @admin.display(description="history")
    def history(self, obj: Memory) -> str:
        events = obj.events.select_related("actor_user").order_by("-created_at", "-id")[:100]
        if not events:
            return "—"
        rows = format_html_join(
            "",
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td><code>{}</code></td></tr>",
            (
                (
                    timezone.localtime(event.created_at).strftime("%Y-%m-%d %H:%M:%S"),
                    event.action,
                    event.actor_label,
                    event.reason,
                    _changes_text(event.changes),
                )
                for event in events
            ),
        )
        return format_html(
            "<table><thead><tr><th>when</th><th>what</th><th>who</th><th>why</th>"
            "<th>changes</th></tr></thead><tbody>{}</tbody></table>",
            rows,
        )


def memory_search(queryset: QuerySet[Memory], term: str, *, inactive: bool) -> QuerySet[Memory]:
    """The memories whose words match ``term`` as a web search (as the API's ``q``), that
    carry it as a whole tag, or whose id it is (``123`` or ``#123``). The words and tags are
    looked up in memory_search_gin and memory_tags_gin, which hold the active memories only:
    those are searched unless ``inactive`` (then without an index, over what the other
    filters leave)."""
    term = term.strip()
    if not term:
        return queryset
    number = term.removeprefix("#")
    memory_id = as_id(number)
    by_id = Q(pk=memory_id) if memory_id is not None else Q(pk__in=[])
    if term.startswith("#") and is_whole_number(number):
        return queryset.filter(by_id)
    words = SearchQuery(term, search_type="websearch", config="english")
    # One OR of three simple arms, each of which an index answers (a bitmap OR).
    by_words = Q(search_vector=words, active=not inactive)
    by_tag = Q(tags__contains=[term], active=not inactive)
    return queryset.filter(by_id | by_words | by_tag)


def _changes_text(changes: dict[str, Any]) -> str:
    return "; ".join(f"{name}: {before!r} → {after!r}" for name, (before, after) in changes.items())


@admin.register(MemoryEvent)
class MemoryEventAdmin(ReadOnly, ByProjectRole):
    list_display = ["created_at", "memory_id", "project", "action", "actor_label", "reason"]
    list_filter = ["action", ProjectFilter]
    search_fields = ["reason", "actor_label"]
    search_help_text = (
        "#123 or 123: the history of memory 123. Words are looked for in the reason and the"
        " actor without an index: pick a project first on a long history."
    )
    list_select_related = ["project"]
    paginator = EstimatedCountPaginator
    show_full_result_count = False
    # Newest first by id, through the primary key (every project) or event_project_id_idx
    # (one project); the history is written in id order, so this is its time order too.
    ordering = ["-id"]
    sortable_by = ()

    def get_search_results(
        self, request: HttpRequest, queryset: QuerySet[MemoryEvent], search_term: str
    ) -> tuple[QuerySet[MemoryEvent], bool]:
        memory_id = as_id(search_term.strip().removeprefix("#"))
        if memory_id is not None:
            # Through event_memory_recent_idx.
            return queryset.filter(memory_id=memory_id), False
        return super().get_search_results(request, queryset, search_term)

    def global_rows(self, actor: Actor) -> Q:
        # The history of a global memory: of the ones the person may read.
        readable = selectors.global_memories_for(actor=actor).values("pk")
        return Q(project__isnull=True, memory_id__in=readable)
