import django.db.models.deletion
from django.db import migrations, models

from memories import sharding


class Migration(migrations.Migration):
    """The project in the keys of the store's tables (docs/scaling.md), second part.

    A run's items have their project (NOT NULL). Each reference from one of a project's
    rows to another of its tables includes the project, (project_id, x_id) REFERENCES
    (project_id, id): added NOT VALID, then validated while writes go on, and Django's own
    single-column constraint dropped (the field keeps its relation, ``db_constraint=False``).
    MATCH SIMPLE: a global memory's row (project NULL) is not checked. Two references may
    name a global memory, which the move puts in a reference table of its own: a run's
    item's memory and the memory that supersedes another. They keep no constraint, as pairs,
    mentions and history already do; Django applies their deletion rule.

    The unique constraints that lacked the project end with it: a run's item's and a bulk
    edit's item's (the project is their run's or job's, so the same rows are unique), and a
    bulk edit's one undo (NULL projects equal, for a job of no project)."""

    atomic = False

    dependencies = [("memories", "0028_project_keys")]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[
                sharding.project_not_null(
                    table="memories_runmemory",
                    catch_up="UPDATE memories_runmemory i SET project_id = r.project_id"
                    " FROM memories_run r WHERE r.id = i.run_id AND i.project_id IS NULL",
                )
            ],
            state_operations=[
                migrations.AlterField(
                    model_name="runmemory",
                    name="project_id",
                    field=models.BigIntegerField(),
                )
            ],
        ),
        sharding.project_foreign_key(
            table="project_memories",
            name="memory_source_run_in_project",
            column="source_run_id",
            parent="memories_run",
        ),
        sharding.project_foreign_key(
            table="project_memories",
            name="memory_merged_into_in_project",
            column="merged_into_id",
            parent="project_memories",
        ),
        sharding.project_foreign_key(
            table="memories_runmemory",
            name="run_memory_run_in_project",
            column="run_id",
            parent="memories_run",
        ),
        sharding.project_foreign_key(
            table="memories_memoryevent",
            name="event_run_in_project",
            column="run_id",
            parent="memories_run",
        ),
        sharding.project_foreign_key(
            table="memories_bulkedit",
            name="bulk_edit_undo_in_project",
            column="undo_of_id",
            parent="memories_bulkedit",
        ),
        sharding.project_foreign_key(
            table="memories_bulkedititem",
            name="bulk_item_job_in_project",
            column="job_id",
            parent="memories_bulkedit",
        ),
        migrations.AlterField(
            model_name="memory",
            name="source_run",
            field=models.ForeignKey(
                blank=True,
                db_constraint=False,
                db_index=False,
                null=True,
                on_delete=django.db.models.deletion.SET_NULL,
                related_name="written_memories",
                to="memories.run",
            ),
        ),
        migrations.AlterField(
            model_name="memory",
            name="merged_into",
            field=models.ForeignKey(
                blank=True,
                db_constraint=False,
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
            name="superseded_by",
            field=models.ForeignKey(
                blank=True,
                db_constraint=False,
                db_index=False,
                editable=False,
                null=True,
                on_delete=django.db.models.deletion.SET_NULL,
                related_name="supersedes",
                to="memories.memory",
            ),
        ),
        migrations.AlterField(
            model_name="runmemory",
            name="run",
            field=models.ForeignKey(
                db_constraint=False,
                on_delete=django.db.models.deletion.CASCADE,
                related_name="given",
                to="memories.run",
            ),
        ),
        migrations.AlterField(
            model_name="runmemory",
            name="memory",
            field=models.ForeignKey(
                db_constraint=False,
                on_delete=django.db.models.deletion.CASCADE,
                related_name="given_to",
                to="memories.memory",
            ),
        ),
        migrations.AlterField(
            model_name="memoryevent",
            name="run",
            field=models.ForeignKey(
                blank=True,
                db_constraint=False,
                db_index=False,
                null=True,
                on_delete=django.db.models.deletion.SET_NULL,
                related_name="memory_events",
                to="memories.run",
            ),
        ),
        migrations.AlterField(
            model_name="bulkedititem",
            name="job",
            field=models.ForeignKey(
                db_constraint=False,
                db_index=False,
                on_delete=django.db.models.deletion.CASCADE,
                related_name="items",
                to="memories.bulkedit",
            ),
        ),
        migrations.AddConstraint(
            model_name="bulkedit",
            constraint=models.UniqueConstraint(
                condition=models.Q(("undo_of__isnull", False)),
                fields=("undo_of", "project"),
                name="bulk_edit_undone_once",
                nulls_distinct=False,
            ),
        ),
        migrations.AlterField(
            model_name="bulkedit",
            name="undo_of",
            field=models.ForeignKey(
                blank=True,
                db_constraint=False,
                db_index=False,
                null=True,
                on_delete=django.db.models.deletion.CASCADE,
                related_name="undone_by",
                to="memories.bulkedit",
            ),
        ),
        migrations.SeparateDatabaseAndState(
            database_operations=[
                sharding.unique(
                    table="memories_runmemory",
                    name="run_memory_unique",
                    columns=["run_id", "memory_id", "project_id"],
                    old_columns=["run_id", "memory_id"],
                )
            ],
            state_operations=[
                migrations.RemoveConstraint(model_name="runmemory", name="run_memory_unique"),
                migrations.AddConstraint(
                    model_name="runmemory",
                    constraint=models.UniqueConstraint(
                        fields=("run", "memory", "project_id"), name="run_memory_unique"
                    ),
                ),
            ],
        ),
        migrations.SeparateDatabaseAndState(
            database_operations=[
                sharding.unique(
                    table="memories_bulkedititem",
                    name="bulk_item_once_per_job",
                    columns=["job_id", "memory_id", "project_id"],
                    old_columns=["job_id", "memory_id"],
                    nulls_distinct=False,
                )
            ],
            state_operations=[
                migrations.RemoveConstraint(
                    model_name="bulkedititem", name="bulk_item_once_per_job"
                ),
                migrations.AddConstraint(
                    model_name="bulkedititem",
                    constraint=models.UniqueConstraint(
                        fields=("job", "memory_id", "project_id"),
                        name="bulk_item_once_per_job",
                        nulls_distinct=False,
                    ),
                ),
            ],
        ),
    ]
