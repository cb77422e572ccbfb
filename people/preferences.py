"""Users' preferences: set, read, delete, with every change in their history; those meant for
every project proposed and approved like global memories; and all of one user's data in a
project deleted in one call.

A write locks the one row it changes (``SELECT ... FOR UPDATE``, or the unique index when it
creates one), so concurrent writers of one key queue and none is lost; a write commits with
its history row, and the assembly cache learns of it once it commits (memories.hooks)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from django.core.exceptions import PermissionDenied, ValidationError
from django.db import IntegrityError, connection, transaction
from django.db.models import Q, QuerySet
from django.utils import timezone

from memories import hooks
from memories.actors import Actor
from memories.locks import retried
from memories.models import Project
from memories.secrets import SecretsPolicy
from people.models import (
    CATEGORY_MAX,
    KEY_MAX,
    Preference,
    PreferenceAction,
    PreferenceEvent,
    PreferenceStatus,
)
from people.users import clean_json, clean_user_ref, json_size, scrub_json

VALUE_MAX_CHARS = 4000
# A key and a category: letters, digits and _ . : - (they travel in URLs and queries).
NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.:-]*$"
KEY = CATEGORY = re.compile(NAME_PATTERN)


def clean_key(value: object) -> str:
    if not isinstance(value, str) or not value:
        raise ValidationError({"key": "A preference needs a key, e.g. language."})
    if len(value) > KEY_MAX or not KEY.fullmatch(value):
        raise ValidationError(
            {
                "key": f"At most {KEY_MAX} letters, digits and _ . : - (starting with a letter"
                " or a digit), e.g. answer.language."
            }
        )
    return value


def clean_category(value: object) -> str:
    if value is None or value == "":
        return ""
    if not isinstance(value, str) or len(value) > CATEGORY_MAX or not CATEGORY.fullmatch(value):
        raise ValidationError(
            {"category": f"At most {CATEGORY_MAX} letters, digits and _ . : -, e.g. style."}
        )
    return value


def clean_value(value: Any, mode: str) -> Any:
    if value is None:
        raise ValidationError({"value": "A value is required (any JSON but null)."})
    value = clean_json(value)
    if json_size(value) > VALUE_MAX_CHARS:
        raise ValidationError({"value": f"At most {VALUE_MAX_CHARS} characters as JSON."})
    return scrub_json(value, "value", mode)


def _event(
    *,
    project: Project | None,
    user_ref: str,
    key: str,
    action: str,
    actor: Actor,
    changes: dict[str, Any],
) -> None:
    PreferenceEvent.objects.create(
        project=project,
        user_ref=user_ref,
        key=key,
        action=action,
        changes=changes,
        actor_label=actor.label,
        actor_user=actor.user,
    )


def _changes(before: Preference | None, value: Any, category: str) -> dict[str, Any]:
    changes: dict[str, Any] = {}
    if before is None or before.value != value:
        changes["value"] = [None if before is None else before.value, value]
    if before is None or before.category != category:
        changes["category"] = [None if before is None else before.category, category]
    return changes


def _locked_or_created(lookup: dict[str, Any], **fields: Any) -> tuple[Preference, bool]:
    """The row ``lookup`` names, locked (``SELECT ... FOR UPDATE``), or a new one made with
    ``fields``; True when made. A writer that loses the race to create it waits on the
    winner's insert (the unique index), then locks the winner's row."""
    rows = Preference.objects.select_for_update().filter(**lookup)
    found = rows.first()
    if found is not None:
        return found, False
    try:
        with transaction.atomic():
            return Preference.objects.create(**lookup, **fields), True
    except IntegrityError:
        return rows.get(), False


@dataclass(frozen=True)
class Written:
    preference: Preference
    created: bool
    changed: bool


def set_preference(
    *,
    project: Project,
    user_ref: str,
    key: str,
    value: Any,
    category: object = None,
    actor: Actor,
) -> Written:
    """Set a user's preference in a project (created, or changed in place); a category left
    out keeps the one it had."""
    user_ref, key = clean_user_ref(user_ref), clean_key(key)
    value = clean_value(value, project.policy.secrets)
    with transaction.atomic():
        lookup = {"project": project, "user_ref": user_ref, "key": key}
        current, created = _locked_or_created(
            lookup,
            value=value,
            category=clean_category(category),
            updated_by=actor.label,
        )
        if created:
            changes = _changes(None, value, current.category)
        else:
            category = clean_category(current.category if category is None else category)
            changes = _changes(current, value, category)
            if changes:
                current.value, current.category, current.updated_by = value, category, actor.label
                current.save(update_fields=["value", "category", "updated_by", "updated_at"])
        if changes:
            _event(
                project=project,
                user_ref=user_ref,
                key=key,
                action=PreferenceAction.SET,
                actor=actor,
                changes=changes,
            )
            hooks.announce([project.pk])
    return Written(current, created, bool(changes))


def delete_preference(*, project: Project, user_ref: str, key: str, actor: Actor) -> bool:
    """Delete a user's preference in a project; False when there was none."""
    user_ref, key = clean_user_ref(user_ref), clean_key(key)
    with transaction.atomic():
        current = (
            Preference.objects.select_for_update()
            .filter(project=project, user_ref=user_ref, key=key)
            .first()
        )
        if current is None:
            return False
        current.delete()
        _event(
            project=project,
            user_ref=user_ref,
            key=key,
            action=PreferenceAction.DELETE,
            actor=actor,
            changes={"value": [current.value, None], "category": [current.category, None]},
        )
        hooks.announce([project.pk])
    return True


def of_user(project: Project, user_ref: str, category: str | None = None) -> QuerySet[Preference]:
    """A user's preferences in a project, by key."""
    found = Preference.objects.filter(project=project, user_ref=clean_user_ref(user_ref))
    if category is not None:
        found = found.filter(category=clean_category(category))
    return found.order_by("key")


def in_force(project: Project, user_ref: str) -> list[Preference]:
    """What a user prefers in a project: its own preferences, and the approved ones meant for
    every project whose key the project does not set; the project's first, each part by
    key."""
    return in_force_by_id(project.pk, user_ref)


def _in_force(project_id: int, user_ref: str) -> QuerySet[Preference]:
    """One statement, through the unique indexes on (project, user, key); the project's own
    first (NULLs sort last), each part by key."""
    return Preference.objects.filter(
        Q(project_id=project_id) | Q(project__isnull=True, status=PreferenceStatus.APPROVED),
        user_ref=user_ref,
    ).order_by("project_id", "key")


def in_force_by_id(project_id: int, user_ref: str) -> list[Preference]:
    """``in_force`` of the project with this id."""
    chosen: dict[str, Preference] = {}
    for row in _in_force(project_id, user_ref):
        chosen.setdefault(row.key, row)
    return list(chosen.values())


def values_in_force(project_id: int, user_ref: str) -> list[tuple[str, Any, str, bool]]:
    """``in_force_by_id`` as (key, value, category, for every project) rows, no model built:
    what the context gives."""
    chosen: dict[str, tuple[str, Any, str, bool]] = {}
    rows = _in_force(project_id, user_ref).values_list("key", "value", "category", "project_id")
    for key, value, category, owner in rows:
        chosen.setdefault(key, (key, value, category, owner is None))
    return list(chosen.values())


# --- for every project ---------------------------------------------------------------------


def propose_global(
    *,
    user_ref: str,
    key: str,
    value: Any,
    category: object = None,
    actor: Actor,
    proposed_in: Project | None = None,
) -> Preference:
    """Propose a preference for every project: pending until a reviewer of global memories
    approves it (the one in force, if any, stays until then). A second proposal for the same
    user and key replaces the pending one."""
    user_ref, key = clean_user_ref(user_ref), clean_key(key)
    # What holds for every project is held to the strictest rule, as global memories are.
    value = clean_value(value, SecretsPolicy.REJECT)
    category = clean_category(category)
    with transaction.atomic():
        lookup = {
            "project": None,
            "user_ref": user_ref,
            "key": key,
            "status": PreferenceStatus.PENDING,
        }
        pending, created = _locked_or_created(
            lookup,
            value=value,
            category=category,
            proposed_in=proposed_in,
            updated_by=actor.label,
        )
        if created:
            before = None
        else:
            before = pending.value
            pending.value, pending.category, pending.updated_by = value, category, actor.label
            pending.proposed_in = proposed_in
            pending.save(
                update_fields=["value", "category", "updated_by", "proposed_in", "updated_at"]
            )
        _event(
            project=None,
            user_ref=user_ref,
            key=key,
            action=PreferenceAction.PROPOSE,
            actor=actor,
            changes={"value": [before, value], "category": [None, category]},
        )
    return pending


def _reviewer(actor: Actor) -> None:
    if not actor.can_review(None):
        raise PermissionDenied(
            "You need the reviewer role of global memories to decide on preferences meant"
            " for every project."
        )


def approve_global(*, preference_id: int, actor: Actor) -> Preference:
    """Put a proposal in force for every project, in place of the one before it (kept in the
    history). Approving one already approved changes nothing."""
    _reviewer(actor)
    with transaction.atomic():
        proposal = _global_for_update(preference_id)
        if proposal.status == PreferenceStatus.APPROVED:
            return proposal
        if proposal.status != PreferenceStatus.PENDING:
            raise ValidationError({"status": f"This proposal was {proposal.status}."})
        before = (
            Preference.objects.select_for_update()
            .filter(
                project__isnull=True,
                user_ref=proposal.user_ref,
                key=proposal.key,
                status=PreferenceStatus.APPROVED,
            )
            .first()
        )
        if before is not None:
            before.delete()
        proposal.status, proposal.approved_by = PreferenceStatus.APPROVED, actor.user
        proposal.approved_at = timezone.now()
        proposal.save(update_fields=["status", "approved_by", "approved_at", "updated_at"])
        _event(
            project=None,
            user_ref=proposal.user_ref,
            key=proposal.key,
            action=PreferenceAction.APPROVE,
            actor=actor,
            changes={"value": [None if before is None else before.value, proposal.value]},
        )
        hooks.announce([None])
    return proposal


def reject_global(*, preference_id: int, actor: Actor) -> Preference:
    _reviewer(actor)
    with transaction.atomic():
        proposal = _global_for_update(preference_id)
        if proposal.status != PreferenceStatus.PENDING:
            raise ValidationError(
                {"status": f"Only a pending proposal is rejected; this one is {proposal.status}."}
            )
        proposal.status = PreferenceStatus.REJECTED
        proposal.save(update_fields=["status", "updated_at"])
        _event(
            project=None,
            user_ref=proposal.user_ref,
            key=proposal.key,
            action=PreferenceAction.REJECT,
            actor=actor,
            changes={},
        )
    return proposal


def _global_for_update(preference_id: int) -> Preference:
    found = (
        Preference.objects.select_for_update()
        .filter(pk=preference_id, project__isnull=True)
        .first()
    )
    if found is None:
        raise Preference.DoesNotExist(f"No preference {preference_id} for every project.")
    return found


# --- one user's data -----------------------------------------------------------------------


@retried
def erase_user(*, project: Project, user_ref: str, actor: Actor) -> dict[str, int]:
    """Delete all of one user's data in a project: their preferences and the history of them
    (which holds their values), their conversations and messages. One history row records
    the erasure, how much and by whom, never what. Set-based; running it twice deletes
    nothing the second time. Rolled back for a deadlock (the retention job locks old messages
    before their conversations), it runs once more."""
    user_ref = clean_user_ref(user_ref)
    with transaction.atomic(), connection.cursor() as cursor:
        # The rows in the order every writer locks them: preferences, then conversations.
        preferences, _ = Preference.objects.filter(project=project, user_ref=user_ref).delete()
        PreferenceEvent.objects.filter(project=project, user_ref=user_ref).exclude(
            action=PreferenceAction.ERASE
        ).delete()
        # The conversations first, in id order, as an append locks its conversation before
        # it adds messages; then their messages; then them.
        cursor.execute(
            "SELECT id FROM people_conversation WHERE project_id = %s AND user_ref = %s"
            " ORDER BY id FOR UPDATE",
            [project.pk, user_ref],
        )
        ids = [row[0] for row in cursor.fetchall()]
        cursor.execute(
            "DELETE FROM people_message WHERE project_id = %s AND conversation_id = ANY(%s)",
            [project.pk, ids],
        )
        messages = cursor.rowcount
        cursor.execute("DELETE FROM people_conversation WHERE id = ANY(%s)", [ids])
        conversations = cursor.rowcount
        counts = {"preferences": preferences, "conversations": conversations, "messages": messages}
        _event(
            project=project,
            user_ref=user_ref,
            key="",
            action=PreferenceAction.ERASE,
            actor=actor,
            changes=counts,
        )
        if preferences:
            hooks.announce([project.pk])
    return counts


def history(
    project: Project | None, user_ref: str, key: str | None = None
) -> QuerySet[PreferenceEvent]:
    """A user's preference history in a project (None: for every project), newest first."""
    events = PreferenceEvent.objects.filter(project=project, user_ref=clean_user_ref(user_ref))
    if key is not None:
        events = events.filter(key=clean_key(key))
    return events.order_by("-created_at", "-id")
