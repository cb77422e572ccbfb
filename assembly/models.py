"""What assembly keeps: each fit of a project's ranking weights to what its agents used."""

from __future__ import annotations

from django.db import models

from memories.models import Project
from memories.models.choices import in_choices


class FitOutcome(models.TextChoices):
    ADOPTED = "adopted", "adopted"
    KEPT = "kept", "kept the weights in force"
    RESTORED = "restored", "restored earlier weights"


class RankingFit(models.Model):
    """A fit of a project's ranking weights (assembly.learning), whether it was adopted and
    why; or a person's restoring of the weights a fit replaced. ``weights_before`` are the
    weights in force when it was made, so any adoption can be undone."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="ranking_fits")
    created_at = models.DateTimeField(auto_now_add=True)
    outcome = models.CharField(max_length=16, choices=FitOutcome)
    weights_before = models.JSONField()
    weights_after = models.JSONField()
    # The runs with feedback it was fitted on and checked on, and the mean nDCG@10 of each
    # set with the weights before and after.
    trained = models.PositiveIntegerField(default=0)
    held = models.PositiveIntegerField(default=0)
    train_before = models.FloatField(default=0.0)
    train_after = models.FloatField(default=0.0)
    held_before = models.FloatField(default=0.0)
    held_after = models.FloatField(default=0.0)
    # The held-back gain a resampling of those runs still shows 19 times in 20.
    surely = models.FloatField(default=0.0)
    # The newest run it read: a project is fitted again only once newer feedback came.
    newest_run_id = models.BigIntegerField(null=True, blank=True)
    reason = models.TextField()
    actor = models.CharField(max_length=200)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["project", "-created_at"], name="ranking_fit_project_idx")]
        constraints = [
            models.CheckConstraint(
                condition=in_choices("outcome", FitOutcome), name="ranking_fit_outcome_valid"
            )
        ]

    def __str__(self) -> str:
        return f"{self.project} {self.outcome} at {self.created_at:%Y-%m-%d %H:%M}"
