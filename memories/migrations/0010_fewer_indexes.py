"""Fewer indexes for the policy jobs to write. Memories and history rows lose the indexes of
their foreign keys (a project's memories are found through the indexes that start with the
project; the keys most rows leave empty get partial indexes), and the trigram index over
every active memory goes: consolidation finds its candidates through the match-key index.
New indexes are built first, without locking writes out."""

import django.db.models.deletion
from django.conf import settings
from django.contrib.postgres.operations import AddIndexConcurrently, RemoveIndexConcurrently
from django.db import migrations, models


class Migration(migrations.Migration):
    atomic = False

    dependencies = [
        ("memories", "0009_active_text_indexes"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        AddIndexConcurrently(
            model_name="memory",
            index=models.Index(
                condition=models.Q(("source_run__isnull", False)),
                fields=["source_run"],
                name="memory_source_run_idx",
            ),
        ),
        AddIndexConcurrently(
            model_name="memory",
            index=models.Index(
                condition=models.Q(("approved_by__isnull", False)),
                fields=["approved_by"],
                name="memory_approved_by_idx",
            ),
        ),
        AddIndexConcurrently(
            model_name="memory",
            index=models.Index(
                condition=models.Q(("merged_into__isnull", False)),
                fields=["merged_into"],
                name="memory_merged_into_idx",
            ),
        ),
        AddIndexConcurrently(
            model_name="memoryevent",
            index=models.Index(
                condition=models.Q(("actor_user__isnull", False)),
                fields=["actor_user"],
                name="event_actor_user_idx",
            ),
        ),
        AddIndexConcurrently(
            model_name="memoryevent",
            index=models.Index(
                condition=models.Q(("actor_api_key__isnull", False)),
                fields=["actor_api_key"],
                name="event_actor_api_key_idx",
            ),
        ),
        AddIndexConcurrently(
            model_name="memoryevent",
            index=models.Index(
                condition=models.Q(("run__isnull", False)), fields=["run"], name="event_run_idx"
            ),
        ),
        migrations.AlterField(
            model_name="memory",
            name="approved_by",
            field=models.ForeignKey(
                blank=True,
                db_index=False,
                null=True,
                on_delete=django.db.models.deletion.SET_NULL,
                related_name="approved_memories",
                to=settings.AUTH_USER_MODEL,
            ),
        ),
        migrations.AlterField(
            model_name="memory",
            name="merged_into",
            field=models.ForeignKey(
                blank=True,
                db_index=False,
                editable=False,
                null=True,
                on_delete=django.db.models.deletion.SET_NULL,
                related_name="merged",
                to="memories.memory",
            ),
        ),
        migrations.AlterField(
            model_name="memory",
            name="project",
            field=models.ForeignKey(
                blank=True,
                db_index=False,
                null=True,
                on_delete=django.db.models.deletion.CASCADE,
                related_name="memories",
                to="memories.project",
            ),
        ),
        migrations.AlterField(
            model_name="memory",
            name="source_run",
            field=models.ForeignKey(
                blank=True,
                db_index=False,
                null=True,
                on_delete=django.db.models.deletion.SET_NULL,
                related_name="written_memories",
                to="memories.run",
            ),
        ),
        migrations.AlterField(
            model_name="memoryevent",
            name="actor_api_key",
            field=models.ForeignKey(
                blank=True,
                db_index=False,
                null=True,
                on_delete=django.db.models.deletion.SET_NULL,
                related_name="memory_events",
                to="memories.apikey",
            ),
        ),
        migrations.AlterField(
            model_name="memoryevent",
            name="actor_user",
            field=models.ForeignKey(
                blank=True,
                db_index=False,
                null=True,
                on_delete=django.db.models.deletion.SET_NULL,
                related_name="memory_events",
                to=settings.AUTH_USER_MODEL,
            ),
        ),
        migrations.AlterField(
            model_name="memoryevent",
            name="memory",
            field=models.ForeignKey(
                db_constraint=False,
                db_index=False,
                on_delete=django.db.models.deletion.DO_NOTHING,
                related_name="events",
                to="memories.memory",
            ),
        ),
        migrations.AlterField(
            model_name="memoryevent",
            name="run",
            field=models.ForeignKey(
                blank=True,
                db_index=False,
                null=True,
                on_delete=django.db.models.deletion.SET_NULL,
                related_name="memory_events",
                to="memories.run",
            ),
        ),
        RemoveIndexConcurrently(
            model_name="memory",
            name="memory_similar_idx",
        ),
    ]
