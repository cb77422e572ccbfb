"""What the knowledge layer reads into memories, kept beside them: each memory's meaning as a
vector, and the pairs of memories found to repeat or contradict each other with what a
reviewer decided; and the entities memories mention (code names, files, modules, packages,
a project's own words), which memories mention them, and the links reviewers added or removed
between them. The first tables keep the names they had in the store."""

from __future__ import annotations

from django.conf import settings
from django.contrib.postgres.fields import ArrayField
from django.contrib.postgres.indexes import GinIndex
from django.db import models
from django.db.models import F, Q
from django.db.models.functions import Lower

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

    # Checked with the project: (project_id, memory_id) references the memory's
    # (project_id, id) (knowledge 0005). A global memory's row (project NULL) is not checked
    # (MATCH SIMPLE), as it will not be once global memories live in a reference table of
    # their own (docs/scaling.md).
    memory = models.OneToOneField(
        Memory,
        on_delete=models.CASCADE,
        primary_key=True,
        related_name="embedding",
        db_constraint=False,
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
    # How likely times how consequential (knowledge.keep.priority): the queue's order.
    # A database default too: a process of the previous release, still writing pairs while
    # this one migrates, leaves the column to it.
    priority = models.FloatField(default=0.0, db_default=0.0)
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
            # The project is the pair's memories' (NULL for two global ones, and NULLs equal
            # here): with it, the same pairs are unique as before.
            models.UniqueConstraint(
                fields=["first", "second", "project"],
                name="memory_pair_unique",
                nulls_distinct=False,
            ),
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
            # A project's queue, the likeliest and weightiest first.
            models.Index(fields=["project", "status", "-priority", "-id"], name="pair_queue_idx"),
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


# --- entities and their graph (knowledge.entities, knowledge.graph) ----------------------------


class EntityKind(models.TextChoices):
    """What a name read from memories is (knowledge.names)."""

    CODE = "code", "code identifier (CamelCase, snake_case, a call)"
    MODULE = "module", "dotted module name"
    PATH = "path", "file or folder path"
    PACKAGE = "package", "package"
    TERM = "term", "a word the project marks as an entity"


class LinkType(models.TextChoices):
    """How two entities are related: read from the memories that mention both, or said by a
    reviewer (EntityLink)."""

    DEFINED_IN = "defined_in", "defined in (a code name and a file)"
    IMPORTS = "imports", "imports"
    MENTIONS = "mentions", "mentioned together"


class Entity(models.Model):
    """A name memories mention (a class, a function, a file, a module, a package, or a word
    the project marks), per project; the entities of global memories have no project.
    ``key`` is the name in lower case: one entity per key and project."""

    project = models.ForeignKey(
        Project,
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="entities",
        db_index=False,  # entity_project_key_idx starts with it
    )
    name = models.CharField(max_length=200)
    # Byte order ("C"): a prefix search walks the b-tree whatever the database's collation.
    key = models.CharField(max_length=200, db_collation="C")
    kind = models.CharField(max_length=16, choices=EntityKind)
    # The key's parts (``retryqueue``, ``retry``, ``queue``; a path's segments): a search
    # for a word finds the names that hold it, through a GIN index.
    parts = ArrayField(models.CharField(max_length=200), default=list)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "knowledge_entities"
        verbose_name_plural = "entities"
        constraints = [
            # Key first: the write path looks entities up by key (then project).
            models.UniqueConstraint(
                fields=["key", "project"], name="entity_key_unique", nulls_distinct=False
            ),
            models.CheckConstraint(condition=in_choices("kind", EntityKind), name="entity_kind"),
            models.CheckConstraint(condition=~Q(key=""), name="entity_key_not_empty"),
            # What links name an entity by, with the project (docs/scaling.md).
            models.UniqueConstraint(fields=["project", "id"], name="entity_project_id_unique"),
        ]
        indexes = [
            # A project's entities in name order, and a prefix search (C collation).
            models.Index(fields=["project", "key"], name="entity_project_key_idx"),
            GinIndex(fields=["parts"], name="entity_parts_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.kind})"


class EntityMention(models.Model):
    """A memory mentions an entity. Replaced when the memory's words change; kept while it is
    inactive (its mentions count again if it comes back), but only active memories count in
    a graph. ``imports``: the keys of entities this memory says this one imports."""

    # The memory's project (None for a global memory's), copied here by the write that
    # reads its entities: the column a project's rows are distributed by (docs/scaling.md).
    project_id = models.BigIntegerField(null=True, blank=True)
    # No database constraint on the memory (as for pairs): the write that reads a memory's
    # entities does not lock it again at commit; Django cascades a deletion.
    memory = models.ForeignKey(
        Memory, on_delete=models.CASCADE, related_name="+", db_constraint=False, db_index=False
    )  # mention_unique starts with it
    # Nor on the entity: no check of it at every write's commit (entities are deleted only
    # with their project, and Django cascades that).
    entity = models.ForeignKey(
        Entity,
        on_delete=models.CASCADE,
        related_name="mentions",
        db_index=False,
        db_constraint=False,
    )  # mention_entity_idx starts with it
    imports = ArrayField(models.CharField(max_length=200), default=list, blank=True)

    class Meta:
        db_table = "knowledge_entity_mentions"
        constraints = [
            # The project is the memory's (NULLs equal here): the same rows are unique.
            models.UniqueConstraint(
                fields=["memory", "entity", "project_id"],
                name="mention_unique",
                nulls_distinct=False,
            ),
        ]
        indexes = [
            # An entity's memories, and the memories two entities share.
            models.Index(fields=["entity", "memory"], name="mention_entity_idx"),
        ]

    def __str__(self) -> str:
        return f"memory {self.memory_id} mentions entity {self.entity_id}"


class EntityLink(models.Model):
    """A relationship a reviewer added or removed (``removed``) between two entities of one
    project (``first`` the lower id). It overrides what the mentions say: an added link is a
    neighbour with its type even if no memory mentions both; a removed one is no neighbour."""

    project = models.ForeignKey(
        Project, null=True, blank=True, on_delete=models.CASCADE, related_name="entity_links"
    )
    # Both checked with the project: (project_id, first_id) and (project_id, second_id)
    # against the entity's (project_id, id) (knowledge 0005); a link of global entities
    # (project NULL) is not checked (MATCH SIMPLE).
    first = models.ForeignKey(
        Entity, on_delete=models.CASCADE, related_name="+", db_index=False, db_constraint=False
    )  # entity_link_unique starts with it
    second = models.ForeignKey(
        Entity, on_delete=models.CASCADE, related_name="+", db_index=False, db_constraint=False
    )
    type = models.CharField(max_length=16, choices=LinkType, default=LinkType.MENTIONS)
    removed = models.BooleanField(default=False)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        db_index=False,
    )
    actor_label = models.CharField(max_length=200)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        db_table = "knowledge_entity_links"
        constraints = [
            # The project is its entities' (NULLs equal here): the same links are unique.
            models.UniqueConstraint(
                fields=["first", "second", "project"],
                name="entity_link_unique",
                nulls_distinct=False,
            ),
            models.CheckConstraint(condition=Q(first__lt=F("second")), name="entity_link_order"),
            models.CheckConstraint(condition=in_choices("type", LinkType), name="entity_link_type"),
        ]
        indexes = [models.Index(fields=["second"], name="entity_link_second_idx")]

    def __str__(self) -> str:
        state = "removed" if self.removed else self.type
        return f"entity {self.first_id} / {self.second_id} ({state})"


class EntityTerm(models.Model):
    """A word a project marks as an entity (a product, a service, a vendor: ``Stripe``),
    found in its memories whole-word and in any case; NULL project: in global memories."""

    project = models.ForeignKey(
        Project, null=True, blank=True, on_delete=models.CASCADE, related_name="entity_terms"
    )
    name = models.CharField(max_length=100, help_text="As it should be shown, e.g. Stripe.")

    class Meta:
        db_table = "knowledge_entity_terms"
        constraints = [
            models.UniqueConstraint(
                Lower("name"), "project", name="entity_term_unique", nulls_distinct=False
            ),
            models.CheckConstraint(condition=~Q(name=""), name="entity_term_not_empty"),
        ]

    def __str__(self) -> str:
        return self.name


# --- the judge model's answers (knowledge.judge) -----------------------------------------------


class JudgeVerdict(models.TextChoices):
    """What a judge model said two memories are to each other."""

    CONFLICT = "conflict", "both cannot be true at once"
    REPEAT = "repeat", "the same claim"
    COMPATIBLE = "compatible", "both can be true"


class JudgeAnswer(models.Model):
    """A judge model's answer about two memories' words, kept so that the same two texts are
    never asked of the same model twice. ``key`` is the sha256 of the two content hashes in
    sorted order (either memory may come first); ``low_span`` is the disagreeing words of the
    text whose hash sorts first, ``high_span`` of the other."""

    key = models.CharField(max_length=64)
    model = models.CharField(max_length=200)
    verdict = models.CharField(max_length=16, choices=JudgeVerdict)
    low_span = models.TextField(blank=True, default="")
    high_span = models.TextField(blank=True, default="")
    reason = models.TextField(blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "knowledge_judge_answers"
        constraints = [
            models.UniqueConstraint(fields=["key", "model"], name="judge_answer_unique"),
            models.CheckConstraint(
                condition=in_choices("verdict", JudgeVerdict), name="judge_verdict_valid"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.verdict} by {self.model} ({self.key[:12]})"
