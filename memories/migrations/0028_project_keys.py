from django.contrib.postgres.operations import RemoveIndexConcurrently
from django.db import migrations, models

from memories import sharding


class Migration(migrations.Migration):
    """The project in the keys of the store's tables (docs/scaling.md), first part: what a
    project's rows name a memory, a run and a bulk edit by, (project_id, id), built without
    blocking writes; and the project copied into a run's items and a bulk edit's items.

    The unique (project_id, id) of the memories takes the place of memory_project_id_idx,
    the index of the same columns the admin's lists walk. The copies are filled a batch of
    ids at a time; memories 0029 makes the run items' NOT NULL and adds the keys."""

    atomic = False

    dependencies = [("memories", "0027_bulk_edits")]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[
                sharding.unique(
                    table="project_memories",
                    name="memory_project_id_unique",
                    columns=["project_id", "id"],
                )
            ],
            state_operations=[
                migrations.AddConstraint(
                    model_name="memory",
                    constraint=models.UniqueConstraint(
                        fields=("project", "id"), name="memory_project_id_unique"
                    ),
                )
            ],
        ),
        RemoveIndexConcurrently(model_name="memory", name="memory_project_id_idx"),
        migrations.SeparateDatabaseAndState(
            database_operations=[
                sharding.unique(
                    table="memories_run", name="run_project_id_unique", columns=["project_id", "id"]
                )
            ],
            state_operations=[
                migrations.AddConstraint(
                    model_name="run",
                    constraint=models.UniqueConstraint(
                        fields=("project", "id"), name="run_project_id_unique"
                    ),
                )
            ],
        ),
        migrations.AddConstraint(
            model_name="bulkedit",
            constraint=models.UniqueConstraint(
                fields=("project", "id"), name="bulk_edit_project_id_unique"
            ),
        ),
        migrations.AddField(
            model_name="runmemory",
            name="project_id",
            field=models.BigIntegerField(null=True),
        ),
        migrations.AddField(
            model_name="bulkedititem",
            name="project_id",
            field=models.BigIntegerField(blank=True, null=True),
        ),
        sharding.copy_project(
            table="memories_runmemory",
            sql="UPDATE memories_runmemory i SET project_id = r.project_id FROM memories_run r"
            " WHERE r.id = i.run_id AND i.id >= %(low)s AND i.id < %(high)s"
            " AND i.project_id IS NULL",
        ),
        sharding.copy_project(
            table="memories_bulkedititem",
            sql="UPDATE memories_bulkedititem i SET project_id = j.project_id"
            " FROM memories_bulkedit j WHERE j.id = i.job_id AND j.project_id IS NOT NULL"
            " AND i.id >= %(low)s AND i.id < %(high)s AND i.project_id IS NULL",
        ),
    ]
