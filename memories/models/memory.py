"""Memories (table ``project_memories``), and what each run was given."""

from __future__ import annotations

from django.conf import settings
from django.contrib.postgres.fields import ArrayField
from django.contrib.postgres.indexes import GinIndex
from django.contrib.postgres.search import SearchVectorField
from django.db import models
from django.db.models import F, Func, Q, Value
from django.db.models.functions import Cast, Coalesce, Length
from django.db.models.lookups import LessThanOrEqual

from memories.keyset import or_never
from memories.models.choices import (
    CONTENT_HARD_LIMIT,
    NEEDS_REVIEW,
    UNIT_INTERVAL,
    MemoryType,
    ReviewStatus,
    Scope,
    Source,
    Tier,
    between_0_and_1,
    in_choices,
)
from memories.models.projects import Project
from memories.models.runs import Run


def _document() -> Func:
    """The SQL of a memory's words (memories.words.DOCUMENT)."""
    return Func(
        F("content"),
        F("summary"),
        Cast("tags", ArrayField(models.TextField())),
        function="memory_document",
        output_field=SearchVectorField(),
    )


class Memory(models.Model):
    # The foreign keys carry no index of their own: a project's memories are found through
    # the indexes that start with the project, the others through partial indexes of the few
    # rows that have one. Every index is written again when a policy job changes a memory's
    # confidence, so none is kept that no query needs.
    project = models.ForeignKey(
        Project,
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="memories",
        db_index=False,
    )
    scope = models.CharField(max_length=16, choices=Scope, default=Scope.PROJECT)
    type = models.CharField(max_length=16, choices=MemoryType)
    content = models.TextField()
    summary = models.TextField(blank=True)
    source = models.CharField(max_length=16, choices=Source)
    # Checked by the database with the project: (project_id, source_run_id) references the
    # run's (project_id, id) (memories 0029; memories.sharding): a run of another project is
    # refused. Global memories have no run.
    source_run = models.ForeignKey(
        Run,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="written_memories",
        db_index=False,
        db_constraint=False,
    )
    tags = ArrayField(models.CharField(max_length=200), default=list, blank=True)
    # Anchored regexes of the tags (memories.tags), kept by the services beside the tags.
    tag_patterns = ArrayField(models.TextField(), default=list, blank=True, editable=False)
    # Literal keys of the tags (memories.tags.tag_keys), kept by the services beside the tags.
    tag_keys = ArrayField(models.TextField(), default=list, blank=True, editable=False)
    relevance_score = models.FloatField(default=0.5, validators=UNIT_INTERVAL)
    confidence = models.FloatField(validators=UNIT_INTERVAL)
    active = models.BooleanField(default=True)
    expires_at = models.DateTimeField(null=True, blank=True)
    review_status = models.CharField(
        max_length=16, choices=ReviewStatus, default=ReviewStatus.PENDING
    )
    approved_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="approved_memories",
        db_index=False,
    )
    approved_at = models.DateTimeField(null=True, blank=True)
    pinned = models.BooleanField(default=False)
    tier = models.CharField(max_length=16, choices=Tier, default=Tier.HOT)
    token_count = models.PositiveIntegerField(editable=False)
    access_count = models.PositiveIntegerField(default=0, editable=False)
    last_accessed_at = models.DateTimeField(null=True, blank=True, editable=False)
    # Lifecycle bookkeeping (policies/): the last decay step; when the content was
    # compressed; archived (evicted, merged or cleared: tier frozen, inactive, restorable);
    # the memory a merge folded this one into; flagged stale by a code change (and its ref).
    # The merge survivor is checked with the project, (project_id, merged_into_id) against
    # (project_id, id): one of the same project. A global memory (project NULL) merged into a
    # project's new one is not checked (MATCH SIMPLE), as a global memory will not be once it
    # lives in a reference table (docs/scaling.md).
    decayed_at = models.DateTimeField(null=True, blank=True, editable=False)
    compressed_at = models.DateTimeField(null=True, blank=True, editable=False)
    archived_at = models.DateTimeField(null=True, blank=True, editable=False)
    merged_into = models.ForeignKey(
        "self",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="merged",
        editable=False,
        db_index=False,
        db_constraint=False,
    )
    # Superseded: replaced by another memory (archived, restorable), when and by whom. A
    # project's memory may be superseded by a global one, which the move puts in a reference
    # table of its own (docs/scaling.md): no one key can name both, so the database holds no
    # constraint here (as for pairs and history); Django sets it to NULL when that one goes.
    superseded_by = models.ForeignKey(
        "self",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="supersedes",
        editable=False,
        db_index=False,
        db_constraint=False,
    )
    # The runs it was given to (``run.memories`` the other way), with rank and score.
    runs: models.ManyToManyField[Run, RunMemory] = models.ManyToManyField(
        Run, through="RunMemory", related_name="memories", blank=True
    )
    superseded_at = models.DateTimeField(null=True, blank=True, editable=False)
    superseded_actor = models.CharField(max_length=200, blank=True, editable=False, db_default="")
    stale_at = models.DateTimeField(null=True, blank=True, editable=False)
    stale_ref = models.CharField(max_length=200, blank=True, editable=False, db_default="")
    content_hash = models.CharField(max_length=64, editable=False)
    # A memory's words (memories.words): its content and summary as English text, the parts
    # of the code names in them (``_multipart.py``, ``MultiDict``) and the words of its tags'
    # folders and files, stemmed by PostgreSQL.
    search_vector = models.GeneratedField(
        expression=_document(),
        output_field=SearchVectorField(),
        db_persist=True,
    )
    # What the assembly looks candidates up by, in one GIN index: the tag keys and the
    # memory's words, each prefixed with the owner (the project id, or "g" for global
    # memories) so that a lookup reads only its own project's postings.
    match_keys = models.GeneratedField(
        expression=Func(
            Coalesce(Cast("project_id", models.TextField()), Value("g")),
            F("tag_keys"),
            _document(),
            function="memory_match_keys",
            output_field=ArrayField(models.TextField()),
        ),
        output_field=ArrayField(models.TextField()),
        db_persist=True,
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        db_table = "project_memories"
        verbose_name_plural = "memories"
        ordering = ["-created_at", "-id"]
        permissions = [
            ("review_memory", "Can approve and reject memories of every project"),
            ("view_every_project", "Can read the memories of every project"),
            ("review_global_memory", "Can approve and reject global memories"),
        ]
        constraints = [
            models.CheckConstraint(
                condition=between_0_and_1("confidence"), name="memory_confidence_range"
            ),
            models.CheckConstraint(
                condition=between_0_and_1("relevance_score"), name="memory_relevance_range"
            ),
            models.CheckConstraint(
                condition=in_choices("type", MemoryType), name="memory_type_valid"
            ),
            models.CheckConstraint(
                condition=in_choices("source", Source), name="memory_source_valid"
            ),
            models.CheckConstraint(condition=in_choices("scope", Scope), name="memory_scope_valid"),
            models.CheckConstraint(condition=in_choices("tier", Tier), name="memory_tier_valid"),
            models.CheckConstraint(
                condition=in_choices("review_status", ReviewStatus),
                name="memory_review_status_valid",
            ),
            models.CheckConstraint(
                condition=Q(scope=Scope.GLOBAL, project__isnull=True)
                | (~Q(scope=Scope.GLOBAL) & Q(project__isnull=False)),
                name="memory_global_iff_no_project",
            ),
            models.CheckConstraint(
                condition=~Q(scope=Scope.RUN) | Q(source_run__isnull=False),
                name="memory_run_scope_has_run",
            ),
            models.CheckConstraint(
                condition=~Q(content="")
                & Q(LessThanOrEqual(Length("content"), CONTENT_HARD_LIMIT)),
                name="memory_content_length",
            ),
            models.CheckConstraint(
                condition=~Q(review_status=ReviewStatus.APPROVED) | Q(approved_at__isnull=False),
                name="memory_approved_has_time",
            ),
            models.CheckConstraint(
                condition=Q(archived_at__isnull=True) | Q(active=False, tier=Tier.FROZEN),
                name="memory_archived_is_frozen",
            ),
            models.CheckConstraint(
                condition=Q(merged_into__isnull=True) | Q(archived_at__isnull=False),
                name="memory_merged_is_archived",
            ),
            models.CheckConstraint(
                condition=Q(superseded_by__isnull=True)
                | (Q(archived_at__isnull=False) & Q(superseded_at__isnull=False)),
                name="memory_superseded_is_archived",
            ),
            # What a project's rows name a memory by (project_id, id), so that a key of
            # another project's memory is refused (docs/scaling.md). Also the admin's list of
            # one project's memories, newest first (WHERE project_id = %s ORDER BY id DESC
            # LIMIT 50 OFFSET %s): an index-only walk at any page; it also counts a project's
            # memories and finds them when it is deleted. It holds every memory, active or
            # not, as the admin shows them all.
            models.UniqueConstraint(fields=["project", "id"], name="memory_project_id_unique"),
        ]
        indexes = [
            # Selection at run start: a project's active memories, best first.
            models.Index(
                F("project"),
                (F("confidence") * F("relevance_score")).desc(),
                F("id"),
                condition=Q(active=True),
                name="memory_selection_idx",
            ),
            # The same for global memories (IS NULL is no equality: the one above cannot
            # give their order).
            models.Index(
                (F("confidence") * F("relevance_score")).desc(),
                F("id"),
                condition=Q(active=True, project__isnull=True),
                name="memory_global_selection_idx",
            ),
            # Review queue: what waits for a reviewer in a project, newest first (and counted).
            models.Index(
                F("project"),
                F("created_at").desc(),
                F("id").desc(),
                condition=NEEDS_REVIEW,
                name="memory_needs_review_idx",
            ),
            # The lists of a project's memories (the API's and the review pages'), one per
            # order they offer, active or not: any page of any filter is a range of one of
            # these (memories.keyset), never a sort of the project.
            models.Index(fields=["project", "created_at", "id"], name="memory_list_created_idx"),
            models.Index(fields=["project", "updated_at", "id"], name="memory_list_updated_idx"),
            models.Index(fields=["project", "confidence", "id"], name="memory_list_confidence_idx"),
            models.Index(
                F("project"), or_never("expires_at"), F("id"), name="memory_list_expiry_idx"
            ),
            # A review status is the one filter whose values can be rare either way (a new
            # project has none approved; an old one few pending): its rows in list order.
            models.Index(
                fields=["project", "review_status", "created_at", "id"],
                name="memory_list_status_idx",
            ),
            # The queue of every project, newest first; and a project's or every project's
            # least confident first (the few rows that wait, never the project's whole list).
            models.Index(
                F("created_at").desc(),
                F("id").desc(),
                condition=NEEDS_REVIEW,
                name="memory_review_newest_idx",
            ),
            models.Index(
                fields=["project", "confidence", "id"],
                condition=NEEDS_REVIEW,
                name="memory_review_confidence_idx",
            ),
            models.Index(
                fields=["confidence", "id"],
                condition=NEEDS_REVIEW,
                name="memory_review_least_idx",
            ),
            # Expiry job: active memories with an expiry.
            models.Index(
                fields=["expires_at"],
                condition=Q(active=True, expires_at__isnull=False),
                name="memory_expiry_idx",
            ),
            # Consolidation: equal content among a project's active memories of a type.
            models.Index(
                fields=["project", "type", "content_hash"],
                condition=Q(active=True),
                name="memory_active_hash_idx",
            ),
            # Policy jobs that walk the active memories in id windows (decay, tiers,
            # compression, consolidation).
            models.Index(fields=["id"], condition=Q(active=True), name="memory_active_walk_idx"),
            # Run scratch cleanup: active memories of scope run, by their run.
            models.Index(
                fields=["source_run"],
                condition=Q(active=True, scope=Scope.RUN),
                name="memory_run_scratch_idx",
            ),
            # The foreign keys that most memories leave empty, for the rows that have one
            # (deleting a run, a user or a merge survivor sets them to NULL).
            models.Index(
                fields=["source_run"],
                condition=Q(source_run__isnull=False),
                name="memory_source_run_idx",
            ),
            models.Index(
                fields=["approved_by"],
                condition=Q(approved_by__isnull=False),
                name="memory_approved_by_idx",
            ),
            models.Index(
                fields=["merged_into"],
                condition=Q(merged_into__isnull=False),
                name="memory_merged_into_idx",
            ),
            models.Index(
                fields=["superseded_by"],
                condition=Q(superseded_by__isnull=False),
                name="memory_superseded_by_idx",
            ),
            # Review pages: memories flagged stale by a code change; archived ones.
            models.Index(
                fields=["project", "-stale_at"],
                condition=Q(stale_at__isnull=False),
                name="memory_stale_idx",
            ),
            models.Index(
                fields=["project", "-archived_at"],
                condition=Q(archived_at__isnull=False),
                name="memory_archived_idx",
            ),
            # The API's tag and text filters, on active memories (their default). A memory
            # that expires, is evicted or merged leaves these indexes instead of adding its
            # tags and words again: half the cost of an expiry batch.
            GinIndex(fields=["tags"], name="memory_tags_gin", condition=Q(active=True)),
            GinIndex(fields=["search_vector"], name="memory_search_gin", condition=Q(active=True)),
            # Context assembly: candidates by write-scope key and by intent word; only active
            # memories are ever looked up. New entries wait in a short pending list (256 kB,
            # which a lookup scans too) and join the index in bulk: a decay batch rewrites
            # thousands of rows, each with about 50 keys, at half the cost of adding them
            # one by one.
            GinIndex(
                fields=["match_keys"],
                name="memory_match_keys_gin",
                fastupdate=True,
                gin_pending_list_limit=256,
                condition=Q(active=True),
            ),
        ]

    def __str__(self) -> str:
        return f"[{self.type}] {self.content[:60]}"


class RunMemory(models.Model):
    """A memory a run was given at its start, with its rank and score."""

    # The run's project, copied here by run_give_memories: the run is checked with it,
    # (project_id, run_id) against the run's (project_id, id) (memories 0029), and it is the
    # column a project's rows are distributed by (docs/scaling.md).
    project_id = models.BigIntegerField()
    run = models.ForeignKey(
        Run, on_delete=models.CASCADE, related_name="given", db_constraint=False
    )
    # A run is given global memories too, which the move puts in a reference table of their
    # own: no one key can name both, so the database holds no constraint on the memory (as
    # for pairs and history); Django deletes these rows with their memory.
    memory = models.ForeignKey(
        Memory, on_delete=models.CASCADE, related_name="given_to", db_constraint=False
    )
    rank = models.PositiveIntegerField()
    score = models.FloatField(default=0.0)
    # The parts of its score when it was given (assembly.packing.score): what a fit of the
    # project's ranking weights learns from (assembly.learning).
    parts = models.JSONField(default=dict, blank=True)
    # Whether the agent used it, as its run's outcome said (None: the outcome said nothing).
    used = models.BooleanField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["run", "rank"]
        constraints = [
            # With the project last, the index still finds a run's memories.
            models.UniqueConstraint(
                fields=["run", "memory", "project_id"], name="run_memory_unique"
            ),
        ]
        indexes = [models.Index(fields=["memory", "-created_at"], name="run_memory_by_memory_idx")]

    def __str__(self) -> str:
        return f"{self.run} #{self.rank}: {self.memory_id}"
