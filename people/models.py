"""What agents keep about the people they work for (DESIGN.md 6f): each user's preferences
(a key, a JSON value and a category, per project or proposed for every project), their
history, and the conversations agents had with them.

A user is named as the calling system names them (``user_ref``, ``userId`` in the API):
no account is needed. Every table here starts its keys with the project, so that a project's
rows stay together (and on one shard, docs/scaling.md)."""

from __future__ import annotations

from django.conf import settings
from django.contrib.postgres.fields import ArrayField
from django.contrib.postgres.indexes import GinIndex
from django.contrib.postgres.search import SearchVector, SearchVectorField
from django.db import models
from django.db.models import Q
from django.db.models.functions import Length
from django.db.models.lookups import LessThanOrEqual

from knowledge.models import RealField
from memories.models import Project
from memories.models.choices import in_choices

USER_REF_MAX = 200
KEY_MAX = 200
CATEGORY_MAX = 100
MESSAGE_HARD_LIMIT = 100_000


class PreferenceStatus(models.TextChoices):
    """A project's preference is in force when set. One for every project is proposed
    (pending), then approved or rejected by a reviewer of global memories."""

    PENDING = "pending"
    APPROVED = "approved"
    REJECTED = "rejected"


class Preference(models.Model):
    """One preference of one user: ``project`` NULL for one meant for every project."""

    project = models.ForeignKey(
        Project, null=True, blank=True, on_delete=models.CASCADE, related_name="preferences"
    )
    user_ref = models.CharField("user id", max_length=USER_REF_MAX)
    key = models.CharField(max_length=KEY_MAX)
    value = models.JSONField()
    category = models.CharField(max_length=CATEGORY_MAX, blank=True, default="", db_default="")
    status = models.CharField(
        max_length=8,
        choices=PreferenceStatus,
        default=PreferenceStatus.APPROVED,
        db_default=PreferenceStatus.APPROVED,
    )
    # The project whose key or reviewer proposed one for every project.
    proposed_in = models.ForeignKey(
        Project,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="proposed_preferences",
        db_index=False,
    )
    updated_by = models.CharField(max_length=200)
    approved_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        db_index=False,
    )
    approved_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["project", "user_ref", "key"],
                condition=Q(project__isnull=False),
                name="preference_one_per_key",
            ),
            # For every project: one in force and one proposal at most per user and key.
            # (With the project, NULL and equal in every row it holds: the move puts these rows
            # in a reference table of their own, docs/scaling.md.)
            models.UniqueConstraint(
                fields=["user_ref", "key", "status", "project"],
                condition=Q(project__isnull=True) & ~Q(status=PreferenceStatus.REJECTED),
                name="preference_global_one_per_key",
                nulls_distinct=False,
            ),
            models.CheckConstraint(
                condition=in_choices("status", PreferenceStatus)
                & (Q(project__isnull=True) | Q(status=PreferenceStatus.APPROVED)),
                name="preference_status_valid",
            ),
        ]
        indexes = [
            models.Index(
                fields=["user_ref", "key"],
                condition=Q(project__isnull=True),
                name="preference_global_user_idx",
            ),
        ]

    def __str__(self) -> str:
        where = self.project_id or "every project"
        return f"{self.user_ref}: {self.key} ({where})"


class PreferenceAction(models.TextChoices):
    SET = "set"
    DELETE = "delete"
    PROPOSE = "propose"
    APPROVE = "approve"
    REJECT = "reject"
    # All of one user's data deleted: the row says how much, never what.
    ERASE = "erase"


class PreferenceEvent(models.Model):
    """One change to a user's preferences, or the erasure of all their data in a project.

    Kept by user and key rather than by row, so a deleted preference's history stays."""

    project = models.ForeignKey(
        Project, null=True, blank=True, on_delete=models.CASCADE, related_name="+"
    )
    user_ref = models.CharField(max_length=USER_REF_MAX)
    key = models.CharField(max_length=KEY_MAX, blank=True)
    action = models.CharField(max_length=8, choices=PreferenceAction)
    # {"value": [before, after], "category": [before, after]}; on an erasure, the counts.
    changes = models.JSONField(default=dict, blank=True)
    actor_label = models.CharField(max_length=200)
    actor_user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        db_index=False,
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        indexes = [
            models.Index(
                fields=["project", "user_ref", "key", "-created_at"], name="pref_event_key_idx"
            ),
        ]
        constraints = [
            models.CheckConstraint(
                condition=in_choices("action", PreferenceAction), name="pref_event_action_valid"
            )
        ]

    def __str__(self) -> str:
        return f"{self.action} {self.user_ref}:{self.key}"


class Conversation(models.Model):
    """What an agent and a user said to each other, kept for the project's retention."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="conversations")
    user_ref = models.CharField("user id", max_length=USER_REF_MAX)
    agent_id = models.CharField(max_length=200)
    title = models.CharField(max_length=200, blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)
    # The time of its last message: retention counts from here.
    last_message_at = models.DateTimeField()
    message_count = models.PositiveIntegerField(default=0)

    class Meta:
        constraints = [
            # Lets a message name its conversation together with the project.
            models.UniqueConstraint(fields=["project", "id"], name="conversation_project_id"),
        ]
        indexes = [
            models.Index(
                fields=["project", "user_ref", "-last_message_at"], name="conversation_user_idx"
            ),
            models.Index(fields=["project", "last_message_at"], name="conversation_age_idx"),
        ]

    def __str__(self) -> str:
        return f"conversation {self.pk} of {self.user_ref} with {self.agent_id}"


class Role(models.TextChoices):
    USER = "user"
    ASSISTANT = "assistant"
    SYSTEM = "system"
    TOOL = "tool"


class Message(models.Model):
    """One message of a conversation, at its place in it."""

    # Checked with the project: (project_id, conversation_id) against the conversation's
    # (project_id, id) (people 0002).
    conversation = models.ForeignKey(
        Conversation,
        on_delete=models.CASCADE,
        related_name="messages",
        db_index=False,
        db_constraint=False,
    )
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="+", db_index=False)
    position = models.PositiveIntegerField()
    role = models.CharField(max_length=9, choices=Role)
    content = models.TextField()
    sent_at = models.DateTimeField()
    search_vector = models.GeneratedField(
        expression=SearchVector("content", config="english"),
        output_field=SearchVectorField(),
        db_persist=True,
    )
    # The content's meaning by the configured embedding model (knowledge.embeddings), as a
    # unit vector; NULL until computed.
    embedding_model = models.CharField(max_length=200, blank=True, default="")
    vector = ArrayField(RealField(), null=True, blank=True)

    class Meta:
        constraints = [
            # The project is the conversation's: the same rows are unique.
            models.UniqueConstraint(
                fields=["conversation", "position", "project"], name="message_one_per_position"
            ),
            models.CheckConstraint(condition=in_choices("role", Role), name="message_role_valid"),
            models.CheckConstraint(
                condition=Q(LessThanOrEqual(Length("content"), MESSAGE_HARD_LIMIT)),
                name="message_content_length",
            ),
        ]
        indexes = [
            models.Index(fields=["project", "sent_at"], name="message_age_idx"),
            GinIndex(fields=["search_vector"], name="message_search_gin"),
        ]

    def __str__(self) -> str:
        return f"message {self.position} of conversation {self.conversation_id}"
