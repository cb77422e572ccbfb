"""The tag and text indexes hold active memories only; the match-key index takes new entries
through a short pending list. Built without locking writes out (a large table takes minutes)."""

import django.contrib.postgres.indexes
from django.contrib.postgres.operations import AddIndexConcurrently, RemoveIndexConcurrently
from django.db import migrations, models


class Migration(migrations.Migration):
    atomic = False

    dependencies = [
        ("memories", "0008_partial_match_keys"),
    ]

    operations = [
        RemoveIndexConcurrently(model_name="memory", name="memory_tags_gin"),
        AddIndexConcurrently(
            model_name="memory",
            index=django.contrib.postgres.indexes.GinIndex(
                condition=models.Q(("active", True)), fields=["tags"], name="memory_tags_gin"
            ),
        ),
        RemoveIndexConcurrently(model_name="memory", name="memory_search_gin"),
        AddIndexConcurrently(
            model_name="memory",
            index=django.contrib.postgres.indexes.GinIndex(
                condition=models.Q(("active", True)),
                fields=["search_vector"],
                name="memory_search_gin",
            ),
        ),
        # Only the storage parameters change: altered in place, not rebuilt.
        migrations.SeparateDatabaseAndState(
            database_operations=[
                migrations.RunSQL(
                    "ALTER INDEX memory_match_keys_gin"
                    " SET (fastupdate = on, gin_pending_list_limit = 256)",
                    "ALTER INDEX memory_match_keys_gin"
                    " SET (fastupdate = off) ; ALTER INDEX memory_match_keys_gin"
                    " RESET (gin_pending_list_limit)",
                ),
            ],
            state_operations=[
                migrations.RemoveIndex(model_name="memory", name="memory_match_keys_gin"),
                migrations.AddIndex(
                    model_name="memory",
                    index=django.contrib.postgres.indexes.GinIndex(
                        condition=models.Q(("active", True)),
                        fastupdate=True,
                        fields=["match_keys"],
                        gin_pending_list_limit=256,
                        name="memory_match_keys_gin",
                    ),
                ),
            ],
        ),
    ]
