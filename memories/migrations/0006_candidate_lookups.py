"""Candidate lookups that stay fast as the table grows: the match-key index without a pending
list (altered in place and flushed, not rebuilt), and the global memories' selection order."""

import django.contrib.postgres.indexes
import django.db.models.expressions
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("memories", "0005_hot_access_updates"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[
                migrations.RunSQL(
                    sql=[
                        "ALTER INDEX memory_match_keys_gin SET (fastupdate = off)",
                        "SELECT gin_clean_pending_list('memory_match_keys_gin'::regclass)",
                    ],
                    reverse_sql="ALTER INDEX memory_match_keys_gin SET (fastupdate = on)",
                ),
            ],
            state_operations=[
                migrations.RemoveIndex(model_name="memory", name="memory_match_keys_gin"),
                migrations.AddIndex(
                    model_name="memory",
                    index=django.contrib.postgres.indexes.GinIndex(
                        fastupdate=False, fields=["match_keys"], name="memory_match_keys_gin"
                    ),
                ),
            ],
        ),
        migrations.AddIndex(
            model_name="memory",
            index=models.Index(
                models.OrderBy(
                    django.db.models.expressions.CombinedExpression(
                        models.F("confidence"), "*", models.F("relevance_score")
                    ),
                    descending=True,
                ),
                models.F("id"),
                condition=models.Q(("active", True), ("project__isnull", True)),
                name="memory_global_selection_idx",
            ),
        ),
    ]
