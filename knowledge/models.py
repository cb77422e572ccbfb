"""What the knowledge layer reads into memories, kept beside them: each memory's meaning as a
vector, and the pairs of memories found to repeat or contradict each other with what a
reviewer decided. The tables keep the names they had in the store."""

from __future__ import annotations

from django.conf import settings
from django.contrib.postgres.fields import ArrayField
from django.db import models
from django.db.models import F, Q

from memories.models import Memory, Project
from memories.models.choices import in_choices


class PairKind(models.TextChoices):
    """What two memories found alike are to each other (knowledge.contradictions)."""

    REPEAT = "repeat"
    CONFLICT = "conflict"


class PairStatus(models.TextChoices):
    OPEN = "open"
    RESOLVED = "resolved"
    # A reviewer judged them no conflict (keep both): holds until either one's words change.
    DISMISSED = "dismissed"


class Resolution(models.TextChoices):
    KEPT = "kept", "kept one, the other superseded by it"
    MERGED = "merged", "merged into one new memory"
    NOT_CONFLICT = "not_conflict", "not a conflict: both kept"
    REJECTED = "rejected", "one rejected"
    CHANGED = "changed", "the words changed: no longer alike"


class RealField(models.FloatField):
    """A 4-byte float (``real``): half the room of a double, all the precision a cosine needs."""

    def db_type(self, connection: object) -> str:
        return "real"


class MemoryEmbedding(models.Model):
    """The embedding of one memory's content by one model, as a unit vector.

    A narrow side table, so that the wide memories row (which every policy job rewrites)
    does not grow. The row is for the content whose ``content_hash`` it names: once the
    memory says something else, or another model is configured, it is stale and no query
    uses it until it is computed again (knowledge.embeddings)."""

    memory = models.OneToOneField(
        Memory, on_delete=models.CASCADE, primary_key=True, related_name="embedding"
    )
    # The memory's project (None for a global memory): lets an index find a project's
    # nearest memories without reading the memories table.
    project_id = models.BigIntegerField(null=True)
    model = models.CharField(max_length=200)
    content_hash = models.CharField(max_length=64)
    vector = ArrayField(RealField())

    class Meta:
        db_table = "memories_memoryembedding"
        verbose_name = "memory embedding"

    def __str__(self) -> str:
        return f"embedding of memory {self.memory_id} by {self.model}"


class MemoryPair(models.Model):
    """Two memories (``first`` the lower id) found to say the same thing (``repeat``) or the
    same subject with a different claim (``conflict``), with the evidence, while ``open``;
    then ``resolved`` (one kept, merged or rejected) or ``dismissed`` (a reviewer judged them
    no conflict). A dismissal holds for the words judged (``first_hash``, ``second_hash``):
    once either memory says something else, the pair may be found again.

    ``project`` is where the pair is reviewed: the project memory's (a project memory and a
    global one), NULL for two global memories."""

    project = models.ForeignKey(
        Project, null=True, blank=True, on_delete=models.CASCADE, related_name="memory_pairs"
    )
    # No database constraint on the memories (as for their history): a write that finds
    # pairs would check each one's memories again; Django cascades a deletion.
    first = models.ForeignKey(
        Memory, on_delete=models.CASCADE, related_name="+", db_constraint=False
    )
    second = models.ForeignKey(
        Memory, on_delete=models.CASCADE, related_name="+", db_constraint=False
    )
    kind = models.CharField(max_length=16, choices=PairKind)
    status = models.CharField(max_length=16, choices=PairStatus, default=PairStatus.OPEN)
    similarity = models.FloatField(default=0.0)
    evidence = models.JSONField(default=dict, blank=True)
    # The words judged: the memories' content hashes when the pair was found or decided.
    first_hash = models.CharField(max_length=64)
    second_hash = models.CharField(max_length=64)
    found_by = models.CharField(max_length=200)
    resolution = models.CharField(max_length=16, choices=Resolution, blank=True, default="")
    # The memory the resolution kept, made (a merge) or rejected.
    outcome_memory = models.ForeignKey(
        Memory,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        db_index=False,
        db_constraint=False,
    )
    resolved_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        db_index=False,
    )
    resolved_actor = models.CharField(max_length=200, blank=True, default="")
    resolved_at = models.DateTimeField(null=True, blank=True)
    reason = models.TextField(blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        db_table = "memory_pairs"
        ordering = ["-created_at", "-id"]
        constraints = [
            models.UniqueConstraint(fields=["first", "second"], name="memory_pair_unique"),
            models.CheckConstraint(condition=Q(first__lt=F("second")), name="memory_pair_order"),
            models.CheckConstraint(condition=in_choices("kind", PairKind), name="pair_kind_valid"),
            models.CheckConstraint(
                condition=in_choices("status", PairStatus), name="pair_status_valid"
            ),
            models.CheckConstraint(
                condition=Q(status=PairStatus.OPEN) | Q(resolved_at__isnull=False),
                name="pair_decided_has_time",
            ),
        ]
        indexes = [
            # A project's pairs for review, newest first (and by status).
            models.Index(
                fields=["project", "status", "-created_at", "-id"], name="pair_project_idx"
            ),
            # The open pairs of given memories (assembly, the queue's marks), from either side.
            models.Index(
                fields=["first"], condition=Q(status=PairStatus.OPEN), name="pair_open_first_idx"
            ),
            models.Index(
                fields=["second"], condition=Q(status=PairStatus.OPEN), name="pair_open_second_idx"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.kind} #{self.first_id} / #{self.second_id} ({self.status})"

    @property
    def memory_ids(self) -> list[int]:
        return [self.first_id, self.second_id]

    def other(self, memory_id: int) -> int:
        return self.second_id if memory_id == self.first_id else self.first_id
