"""The memory store: projects and their policy, memories, runs, and history."""

from __future__ import annotations

from django.conf import settings
from django.contrib.postgres.fields import ArrayField
from django.contrib.postgres.indexes import GinIndex
from django.contrib.postgres.search import SearchVector, SearchVectorField
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.db.models import F, Func, Q, Value
from django.db.models.functions import Cast, Coalesce, Length
from django.db.models.lookups import LessThanOrEqual

from memories.secrets import SecretsPolicy

# The database's bound on content; the configurable limit (MEMORY_CONTENT_MAX_CHARS) is lower.
CONTENT_HARD_LIMIT = 20000
UNIT_INTERVAL = [MinValueValidator(0.0), MaxValueValidator(1.0)]


# Default expiry in days by memory type (None: never expires); a project's policy overrides.
DEFAULT_EXPIRY_DAYS = {"pattern": None, "warning": 90, "learning": 180, "context": 30}


def _in_choices(field: str, choices: type[models.TextChoices]) -> Q:
    return Q(**{f"{field}__in": choices.values})


def _between_0_and_1(field: str) -> Q:
    return Q(**{f"{field}__gte": 0.0, f"{field}__lte": 1.0})


class MemoryType(models.TextChoices):
    PATTERN = "pattern"
    WARNING = "warning"
    LEARNING = "learning"
    CONTEXT = "context"


class Source(models.TextChoices):
    HUMAN = "human"
    RUN = "run"
    LEARNING = "learning"


class Scope(models.TextChoices):
    GLOBAL = "global"
    PROJECT = "project"
    RUN = "run"


class Tier(models.TextChoices):
    HOT = "hot"
    WARM = "warm"
    COLD = "cold"
    FROZEN = "frozen"


class ReviewStatus(models.TextChoices):
    PENDING = "pending"
    APPROVED = "approved"
    REJECTED = "rejected"


# What waits for a human: memories no reviewer has judged yet (active ones, and proposed
# global ones, which only an approval activates), and those a code change flagged stale (an
# approval settles both).
NEEDS_REVIEW = Q(review_status=ReviewStatus.PENDING) & (
    Q(active=True) | Q(scope=Scope.GLOBAL, archived_at__isnull=True)
) | Q(active=True, stale_at__isnull=False)


class Project(models.Model):
    name = models.CharField(max_length=200)
    slug = models.SlugField(max_length=100, unique=True)
    description = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class MemoryPolicy(models.Model):
    """A project's rules for its memories. Expiry days of NULL mean "never expires"."""

    project = models.OneToOneField(Project, on_delete=models.CASCADE, related_name="policy")
    expiry_days_pattern = models.PositiveIntegerField(
        null=True, blank=True, default=DEFAULT_EXPIRY_DAYS["pattern"]
    )
    expiry_days_warning = models.PositiveIntegerField(
        null=True, blank=True, default=DEFAULT_EXPIRY_DAYS["warning"]
    )
    expiry_days_learning = models.PositiveIntegerField(
        null=True, blank=True, default=DEFAULT_EXPIRY_DAYS["learning"]
    )
    expiry_days_context = models.PositiveIntegerField(
        null=True, blank=True, default=DEFAULT_EXPIRY_DAYS["context"]
    )
    selection_limit = models.PositiveIntegerField(
        default=10, validators=[MinValueValidator(1), MaxValueValidator(1000)]
    )
    min_confidence = models.FloatField(default=0.3, validators=UNIT_INTERVAL)
    deactivate_below = models.FloatField(default=0.2, validators=UNIT_INTERVAL)
    max_items = models.PositiveIntegerField(null=True, blank=True)
    # Context assembly: how the score weighs full-text relevance to the intent, quality
    # (confidence x relevance score) and recency; and each source's share of the budget.
    weight_text = models.FloatField(default=0.5, validators=[MinValueValidator(0.0)])
    weight_quality = models.FloatField(default=1.0, validators=[MinValueValidator(0.0)])
    weight_recency = models.FloatField(default=0.2, validators=[MinValueValidator(0.0)])
    recency_half_life_days = models.PositiveIntegerField(default=30)
    share_run = models.FloatField(default=0.4, validators=UNIT_INTERVAL)
    share_project = models.FloatField(default=0.4, validators=UNIT_INTERVAL)
    share_global = models.FloatField(default=0.2, validators=UNIT_INTERVAL)
    # Lifecycle (policies/). Decay: a memory no run was given for decay_after_days loses
    # decay_step per decay_period_days; approved and pinned ones are exempt by default.
    decay_after_days = models.PositiveIntegerField(default=30)
    decay_period_days = models.PositiveIntegerField(default=7, validators=[MinValueValidator(1)])
    decay_step = models.FloatField(default=0.05, validators=UNIT_INTERVAL)
    decay_exempt_approved = models.BooleanField(default=True)
    decay_exempt_pinned = models.BooleanField(default=True)
    # Compression: old, rarely used, long memories get a shorter content (original in history).
    compress_age_days = models.PositiveIntegerField(default=60)
    compress_access_threshold = models.PositiveIntegerField(default=3)
    compress_min_tokens = models.PositiveIntegerField(default=150)
    compression_ratio = models.FloatField(
        default=0.5, validators=[MinValueValidator(0.1), MaxValueValidator(0.9)]
    )
    # Consolidation: same type and trigram similarity at least this (or equal content).
    consolidate_similarity = models.FloatField(
        default=0.8, validators=[MinValueValidator(0.5), MaxValueValidator(1.0)]
    )
    # Eviction: over max_items active memories or max_total_tokens, the lowest value
    # (lru_weight x recency of use + quality_weight x confidence x relevance) is archived.
    max_total_tokens = models.PositiveIntegerField(null=True, blank=True)
    lru_weight = models.FloatField(default=0.5, validators=[MinValueValidator(0.0)])
    quality_weight = models.FloatField(default=0.5, validators=[MinValueValidator(0.0)])
    # Tiers by the last use: hot within tier_hot_days, warm within tier_warm_days, else cold.
    tier_hot_days = models.PositiveIntegerField(default=7)
    tier_warm_days = models.PositiveIntegerField(default=30)
    # Run scratch: memories of scope run are archived this long after their run finished.
    scratch_keep_hours = models.PositiveIntegerField(default=24)
    # Code-change staleness: confidence lost by a memory whose tags a change touched.
    staleness_penalty = models.FloatField(default=0.1, validators=UNIT_INTERVAL)
    # Secrets in what is written (memories.secrets): reject the write, or redact them.
    secrets = models.CharField(
        max_length=8,
        choices=SecretsPolicy.CHOICES,
        default=SecretsPolicy.REJECT,
        db_default=SecretsPolicy.REJECT,
        help_text="What a write holding a secret (API key, token, private key, password) "
        "gets: a 400 that says where, or the secret replaced by [REDACTED <kind>] and the "
        "redaction recorded in the memory's history.",
    )

    class Meta:
        verbose_name_plural = "memory policies"
        constraints = [
            models.CheckConstraint(
                condition=_between_0_and_1("min_confidence"), name="policy_min_confidence_range"
            ),
            models.CheckConstraint(
                condition=_between_0_and_1("deactivate_below"),
                name="policy_deactivate_below_range",
            ),
            models.CheckConstraint(
                condition=Q(selection_limit__gte=1, selection_limit__lte=1000),
                name="policy_selection_limit_range",
            ),
            models.CheckConstraint(
                condition=Q(weight_text__gte=0, weight_quality__gte=0, weight_recency__gte=0),
                name="policy_weights_not_negative",
            ),
            models.CheckConstraint(
                condition=_between_0_and_1("share_run")
                & _between_0_and_1("share_project")
                & _between_0_and_1("share_global"),
                name="policy_shares_range",
            ),
            models.CheckConstraint(
                condition=_between_0_and_1("decay_step")
                & _between_0_and_1("staleness_penalty")
                & Q(decay_period_days__gte=1)
                & Q(compression_ratio__gte=0.1, compression_ratio__lte=0.9)
                & Q(consolidate_similarity__gte=0.5, consolidate_similarity__lte=1.0)
                & Q(lru_weight__gte=0, quality_weight__gte=0)
                & Q(tier_warm_days__gte=F("tier_hot_days")),
                name="policy_lifecycle_ranges",
            ),
        ]

    def __str__(self) -> str:
        return f"policy of {self.project}"

    def expiry_days(self, memory_type: str) -> int | None:
        return getattr(self, f"expiry_days_{memory_type}")


class RunStatus(models.TextChoices):
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"


class Outcome(models.TextChoices):
    """What an agent reports at the end of a run."""

    SUCCEEDED = RunStatus.SUCCEEDED.value
    FAILED = RunStatus.FAILED.value


class Run(models.Model):
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="runs")
    external_id = models.CharField(max_length=200)
    task_title = models.CharField(max_length=500, blank=True)
    write_scope = ArrayField(models.CharField(max_length=500), default=list, blank=True)
    status = models.CharField(max_length=16, choices=RunStatus, default=RunStatus.RUNNING)
    prompt_hash = models.CharField(max_length=64, blank=True)
    started_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    memories: models.ManyToManyField[Memory, RunMemory] = models.ManyToManyField(
        "Memory", through="RunMemory", related_name="runs", blank=True
    )

    class Meta:
        ordering = ["-started_at", "-id"]
        constraints = [
            models.UniqueConstraint(
                fields=["project", "external_id"], name="run_external_id_unique"
            ),
            models.CheckConstraint(
                condition=_in_choices("status", RunStatus), name="run_status_valid"
            ),
            models.CheckConstraint(
                condition=Q(status="running", finished_at__isnull=True)
                | (~Q(status="running") & Q(finished_at__isnull=False)),
                name="run_finished_iff_outcome",
            ),
        ]
        indexes = [models.Index(fields=["project", "-started_at"], name="run_project_recent_idx")]

    def __str__(self) -> str:
        return f"{self.external_id} ({self.status})"


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
    source_run = models.ForeignKey(
        Run,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="written_memories",
        db_index=False,
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
    )
    stale_at = models.DateTimeField(null=True, blank=True, editable=False)
    stale_ref = models.CharField(max_length=200, blank=True, editable=False, db_default="")
    content_hash = models.CharField(max_length=64, editable=False)
    search_vector = models.GeneratedField(
        expression=SearchVector("content", config="english"),
        output_field=SearchVectorField(),
        db_persist=True,
    )
    # What the assembly looks candidates up by, in one GIN index: the tag keys and the
    # content's lexemes, each prefixed with the owner (the project id, or "g" for global
    # memories) so that a lookup reads only its own project's postings.
    match_keys = models.GeneratedField(
        expression=Func(
            Coalesce(Cast("project_id", models.TextField()), Value("g")),
            F("tag_keys"),
            F("content"),
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
        permissions = [("review_memory", "Can approve and reject memories")]
        constraints = [
            models.CheckConstraint(
                condition=_between_0_and_1("confidence"), name="memory_confidence_range"
            ),
            models.CheckConstraint(
                condition=_between_0_and_1("relevance_score"), name="memory_relevance_range"
            ),
            models.CheckConstraint(
                condition=_in_choices("type", MemoryType), name="memory_type_valid"
            ),
            models.CheckConstraint(
                condition=_in_choices("source", Source), name="memory_source_valid"
            ),
            models.CheckConstraint(
                condition=_in_choices("scope", Scope), name="memory_scope_valid"
            ),
            models.CheckConstraint(condition=_in_choices("tier", Tier), name="memory_tier_valid"),
            models.CheckConstraint(
                condition=_in_choices("review_status", ReviewStatus),
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

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="given")
    memory = models.ForeignKey(Memory, on_delete=models.CASCADE, related_name="given_to")
    rank = models.PositiveIntegerField()
    score = models.FloatField(default=0.0)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["run", "rank"]
        constraints = [
            models.UniqueConstraint(fields=["run", "memory"], name="run_memory_unique"),
        ]
        indexes = [models.Index(fields=["memory", "-created_at"], name="run_memory_by_memory_idx")]

    def __str__(self) -> str:
        return f"{self.run} #{self.rank}: {self.memory_id}"


class ApiKey(models.Model):
    """An agent's key to one project's API. Only a sha256 of the secret is stored."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="api_keys")
    name = models.CharField(max_length=100)
    prefix = models.CharField(max_length=16, unique=True, editable=False)
    secret_hash = models.CharField(max_length=64, editable=False)
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True, editable=False)
    revoked_at = models.DateTimeField(null=True, blank=True, editable=False)

    class Meta:
        ordering = ["project", "name"]
        verbose_name = "API key"

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix}…) of {self.project}"

    @property
    def is_active(self) -> bool:
        return self.revoked_at is None


class IdempotencyRecord(models.Model):
    """The response to a create sent with an Idempotency-Key, replayed to retries."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="+")
    key = models.CharField(max_length=200)
    request_hash = models.CharField(max_length=64)
    response_status = models.PositiveSmallIntegerField(null=True)
    # The response as sent, byte for byte.
    response_body = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["project", "key"], name="idempotency_key_unique")
        ]
        indexes = [models.Index(fields=["created_at"], name="idempotency_created_idx")]

    def __str__(self) -> str:
        return f"{self.key} ({self.response_status})"


class EventAction(models.TextChoices):
    CREATED = "created"
    UPDATED = "updated"
    APPROVED = "approved"
    REJECTED = "rejected"
    ACTIVATED = "activated"
    DEACTIVATED = "deactivated"
    PINNED = "pinned"
    UNPINNED = "unpinned"
    OUTCOME = "outcome"
    EXPIRED = "expired"
    DECAYED = "decayed"
    COMPRESSED = "compressed"
    MERGED = "merged"
    EVICTED = "evicted"
    CLEARED = "cleared"
    STALE = "stale"
    RESTORED = "restored"
    DELETED = "deleted"


class MemoryEvent(models.Model):
    """One change to a memory: who, what (field: [before, after]), why.

    The memory reference carries no database constraint, so a deleted memory's
    history stays readable.
    """

    # A memory's history is read through event_memory_recent_idx; the actor and run keys,
    # empty on the system jobs' rows, through partial indexes. Policy jobs write history by
    # the hundred thousand: an index kept for nothing slows every one of those rows.
    memory = models.ForeignKey(
        Memory,
        on_delete=models.DO_NOTHING,
        db_constraint=False,
        related_name="events",
        db_index=False,
    )
    # The project is the memory's (whose key is constrained), and Django cascades a deleted
    # project to its history. A database constraint would check the project of each row
    # again at commit: a fifth of what a decay run spends on its history.
    project = models.ForeignKey(
        Project,
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="memory_events",
        db_constraint=False,
    )
    action = models.CharField(max_length=16, choices=EventAction)
    changes = models.JSONField(default=dict, blank=True)
    reason = models.TextField(blank=True)
    actor_user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="memory_events",
        db_index=False,
    )
    actor_api_key = models.ForeignKey(
        ApiKey,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="memory_events",
        db_index=False,
    )
    actor_label = models.CharField(max_length=200)
    run = models.ForeignKey(
        Run,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="memory_events",
        db_index=False,
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.CheckConstraint(
                condition=_in_choices("action", EventAction), name="event_action_valid"
            ),
        ]
        indexes = [
            models.Index(fields=["memory", "-created_at"], name="event_memory_recent_idx"),
            models.Index(
                fields=["actor_user"],
                condition=Q(actor_user__isnull=False),
                name="event_actor_user_idx",
            ),
            models.Index(
                fields=["actor_api_key"],
                condition=Q(actor_api_key__isnull=False),
                name="event_actor_api_key_idx",
            ),
            models.Index(fields=["run"], condition=Q(run__isnull=False), name="event_run_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.action} of memory {self.memory_id} by {self.actor_label}"
