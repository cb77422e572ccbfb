"""The admin's lists of one project, newest first, walk an index at any page (DESIGN.md 6g).

- memory_project_id_idx (project_id, id), every memory, active or not:
  ``SELECT ... FROM project_memories WHERE project_id = %s ORDER BY id DESC LIMIT 50
  OFFSET %s`` (the admin's memories filtered to a project; its pages read ids by an
  index-only walk). None of the existing indexes gives a project's memories in id order
  (they hold the active ones only, or start with another column after the project).
- event_project_id_idx (project_id, id) on the history, in place of the index of the
  foreign key alone: ``SELECT ... FROM memories_memoryevent WHERE project_id = %s ORDER BY
  id DESC LIMIT 50``; it serves the cascade of a deleted project as the old one did, so the
  history still has one index with the project in it, not two.

Built without locking writes; the new history index before the old one goes.
"""

import django.db.models.deletion
from django.conf import settings
from django.contrib.postgres.operations import AddIndexConcurrently
from django.db import migrations, models

# The name Django gave the index of memories_memoryevent.project_id (0001).
OLD_EVENT_PROJECT_INDEX = "memories_memoryevent_project_id_ef401a18"


class Migration(migrations.Migration):
    atomic = False

    dependencies = [
        ("memories", "0025_list_indexes"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        AddIndexConcurrently(
            model_name="memory",
            index=models.Index(fields=["project", "id"], name="memory_project_id_idx"),
        ),
        AddIndexConcurrently(
            model_name="memoryevent",
            index=models.Index(fields=["project", "id"], name="event_project_id_idx"),
        ),
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField(
                    model_name="memoryevent",
                    name="project",
                    field=models.ForeignKey(
                        blank=True,
                        db_constraint=False,
                        db_index=False,
                        null=True,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="memory_events",
                        to="memories.project",
                    ),
                ),
            ],
            database_operations=[
                migrations.RunSQL(
                    f"DROP INDEX CONCURRENTLY IF EXISTS {OLD_EVENT_PROJECT_INDEX}",
                    reverse_sql=(
                        f"CREATE INDEX CONCURRENTLY IF NOT EXISTS {OLD_EVENT_PROJECT_INDEX}"
                        " ON memories_memoryevent (project_id)"
                    ),
                ),
            ],
        ),
    ]
