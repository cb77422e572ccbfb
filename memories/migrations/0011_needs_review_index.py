"""The review queue's index holds exactly what waits for a reviewer (pending memories, and
those flagged stale), newest first. Built before the old one goes, without locking writes."""

from django.conf import settings
from django.contrib.postgres.operations import AddIndexConcurrently, RemoveIndexConcurrently
from django.db import migrations, models


class Migration(migrations.Migration):
    atomic = False

    dependencies = [
        ("memories", "0010_fewer_indexes"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        AddIndexConcurrently(
            model_name="memory",
            index=models.Index(
                models.F("project"),
                models.OrderBy(models.F("created_at"), descending=True),
                models.OrderBy(models.F("id"), descending=True),
                condition=models.Q(
                    models.Q(
                        ("review_status", "pending"),
                        models.Q(
                            ("active", True),
                            models.Q(("archived_at__isnull", True), ("scope", "global")),
                            _connector="OR",
                        ),
                    ),
                    models.Q(("active", True), ("stale_at__isnull", False)),
                    _connector="OR",
                ),
                name="memory_needs_review_idx",
            ),
        ),
        RemoveIndexConcurrently(
            model_name="memory",
            name="memory_review_queue_idx",
        ),
    ]
