"""What a memory means, as a vector: kept beside the memory, never in its row."""

from __future__ import annotations

from django.contrib.postgres.fields import ArrayField
from django.db import models

from memories.models.memory import Memory


class RealField(models.FloatField):
    """A 4-byte float (``real``): half the room of a double, all the precision a cosine needs."""

    def db_type(self, connection: object) -> str:
        return "real"


class MemoryEmbedding(models.Model):
    """The embedding of one memory's content by one model, as a unit vector.

    A narrow side table, so that the wide memories row (which every policy job rewrites)
    does not grow. The row is for the content whose ``content_hash`` it names: once the
    memory says something else, or another model is configured, it is stale and no query
    uses it until it is computed again (memories.embeddings)."""

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
        verbose_name = "memory embedding"

    def __str__(self) -> str:
        return f"embedding of memory {self.memory_id} by {self.model}"
