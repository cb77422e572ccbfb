"""Projects and their policy: limits, defaults and weights every job and request reads."""

from __future__ import annotations

from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.db.models import F, Q

from memories.models.choices import (
    DEFAULT_EXPIRY_DAYS,
    UNIT_INTERVAL,
    between_0_and_1,
)
from memories.secrets import SecretsPolicy


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
    # How a task's memories are ranked after the write-scope matches (assembly): each part
    # of the score (0 to 1) times its weight.
    weight_scope = models.FloatField(default=2.0, validators=[MinValueValidator(0.0)])
    weight_entities = models.FloatField(default=1.0, validators=[MinValueValidator(0.0)])
    weight_text = models.FloatField(default=0.5, validators=[MinValueValidator(0.0)])
    # The write scope's own words (its folders and file names) against each memory's words.
    weight_path = models.FloatField(default=1.5, validators=[MinValueValidator(0.0)])
    weight_semantic = models.FloatField(default=0.5, validators=[MinValueValidator(0.0)])
    # A memory whose words are this share (or more) of a better-ranked one's, with nothing
    # specific of its own (assembly.diversity), is not given again.
    similar_threshold = models.FloatField(default=0.9, validators=UNIT_INTERVAL)
    # Repeats and contradictions (knowledge.contradictions): two memories at least this
    # similar (cosine of their embeddings, or the share of words they share) are compared;
    # a repeat's smaller side has at least repeat_overlap of its words in the other. Of two
    # memories in an open conflict, assembly gives the one with precedence ("precedence"),
    # or both with a CONFLICT warning ("flag").
    pair_similarity = models.FloatField(default=0.6, validators=UNIT_INTERVAL)
    repeat_overlap = models.FloatField(default=0.7, validators=UNIT_INTERVAL)
    conflict_mode = models.CharField(
        max_length=16,
        choices=[("precedence", "give the one with precedence"), ("flag", "give both, warn")],
        default="precedence",
        db_default="precedence",
    )
    weight_quality = models.FloatField(default=1.0, validators=[MinValueValidator(0.0)])
    weight_recency = models.FloatField(default=0.2, validators=[MinValueValidator(0.0)])
    recency_half_life_days = models.PositiveIntegerField(default=30)
    share_run = models.FloatField(default=0.4, validators=UNIT_INTERVAL)
    share_project = models.FloatField(default=0.4, validators=UNIT_INTERVAL)
    share_global = models.FloatField(default=0.2, validators=UNIT_INTERVAL)
    # A context request that names its user: the most of the budget that user's preferences
    # take first (what they leave goes to the memories, and back).
    share_preferences = models.FloatField(default=0.2, db_default=0.2, validators=UNIT_INTERVAL)
    # Conversations (people/): a message older than this is pruned by the beat job.
    conversation_retention_days = models.PositiveIntegerField(
        default=30, db_default=30, validators=[MinValueValidator(1)]
    )
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
                condition=between_0_and_1("min_confidence"), name="policy_min_confidence_range"
            ),
            models.CheckConstraint(
                condition=between_0_and_1("deactivate_below"),
                name="policy_deactivate_below_range",
            ),
            models.CheckConstraint(
                condition=between_0_and_1("similar_threshold"),
                name="policy_similar_threshold_range",
            ),
            models.CheckConstraint(
                condition=between_0_and_1("pair_similarity") & between_0_and_1("repeat_overlap"),
                name="policy_pair_thresholds_range",
            ),
            models.CheckConstraint(
                condition=Q(conflict_mode__in=["precedence", "flag"]),
                name="policy_conflict_mode_valid",
            ),
            models.CheckConstraint(
                condition=Q(selection_limit__gte=1, selection_limit__lte=1000),
                name="policy_selection_limit_range",
            ),
            models.CheckConstraint(
                condition=Q(
                    weight_scope__gte=0,
                    weight_entities__gte=0,
                    weight_text__gte=0,
                    weight_path__gte=0,
                    weight_semantic__gte=0,
                    weight_quality__gte=0,
                    weight_recency__gte=0,
                ),
                name="policy_weights_not_negative",
            ),
            models.CheckConstraint(
                condition=between_0_and_1("share_run")
                & between_0_and_1("share_project")
                & between_0_and_1("share_global")
                & between_0_and_1("share_preferences"),
                name="policy_shares_range",
            ),
            models.CheckConstraint(
                condition=between_0_and_1("decay_step")
                & between_0_and_1("staleness_penalty")
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
