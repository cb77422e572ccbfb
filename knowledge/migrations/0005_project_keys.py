import django.db.models.deletion
from django.db import migrations, models

from memories import sharding


class Migration(migrations.Migration):
    """The project in the keys of the knowledge layer's tables (docs/scaling.md).

    What links name an entity by, (project_id, id); an embedding's memory and a link's
    entities referenced with the project, (project_id, x_id) REFERENCES (project_id, id),
    added NOT VALID and then validated while writes go on, in place of Django's
    single-column constraints (MATCH SIMPLE: a global memory's or entity's row, project NULL,
    is not checked). A mention gets its memory's project, filled a batch at a time. The
    unique constraints of pairs, links and mentions end with the project: it is their
    memories' or entities' (NULL for global ones, and NULLs equal here), so the same rows are
    unique as before. Indexes are built without blocking writes."""

    atomic = False

    dependencies = [
        ("knowledge", "0004_pair_priority"),
        ("memories", "0028_project_keys"),
    ]

    operations = [
        # Embeddings: their project is their memory's (made so first, should one differ).
        sharding.copy_project(
            table="memories_memoryembedding",
            key="memory_id",
            sql="UPDATE memories_memoryembedding e SET project_id = m.project_id"
            " FROM project_memories m WHERE m.id = e.memory_id"
            " AND e.memory_id >= %(low)s AND e.memory_id < %(high)s"
            " AND e.project_id IS DISTINCT FROM m.project_id",
        ),
        sharding.project_foreign_key(
            table="memories_memoryembedding",
            name="embedding_memory_in_project",
            column="memory_id",
            parent="project_memories",
        ),
        migrations.AlterField(
            model_name="memoryembedding",
            name="memory",
            field=models.OneToOneField(
                db_constraint=False,
                on_delete=django.db.models.deletion.CASCADE,
                primary_key=True,
                related_name="embedding",
                serialize=False,
                to="memories.memory",
            ),
        ),
        # Entities and their links.
        migrations.SeparateDatabaseAndState(
            database_operations=[
                sharding.unique(
                    table="knowledge_entities",
                    name="entity_project_id_unique",
                    columns=["project_id", "id"],
                )
            ],
            state_operations=[
                migrations.AddConstraint(
                    model_name="entity",
                    constraint=models.UniqueConstraint(
                        fields=("project", "id"), name="entity_project_id_unique"
                    ),
                )
            ],
        ),
        sharding.project_foreign_key(
            table="knowledge_entity_links",
            name="entity_link_first_in_project",
            column="first_id",
            parent="knowledge_entities",
        ),
        sharding.project_foreign_key(
            table="knowledge_entity_links",
            name="entity_link_second_in_project",
            column="second_id",
            parent="knowledge_entities",
        ),
        migrations.AlterField(
            model_name="entitylink",
            name="first",
            field=models.ForeignKey(
                db_constraint=False,
                db_index=False,
                on_delete=django.db.models.deletion.CASCADE,
                related_name="+",
                to="knowledge.entity",
            ),
        ),
        migrations.AlterField(
            model_name="entitylink",
            name="second",
            field=models.ForeignKey(
                db_constraint=False,
                db_index=False,
                on_delete=django.db.models.deletion.CASCADE,
                related_name="+",
                to="knowledge.entity",
            ),
        ),
        migrations.SeparateDatabaseAndState(
            database_operations=[
                sharding.unique(
                    table="knowledge_entity_links",
                    name="entity_link_unique",
                    columns=["first_id", "second_id", "project_id"],
                    old_columns=["first_id", "second_id"],
                    nulls_distinct=False,
                )
            ],
            state_operations=[
                migrations.RemoveConstraint(model_name="entitylink", name="entity_link_unique"),
                migrations.AddConstraint(
                    model_name="entitylink",
                    constraint=models.UniqueConstraint(
                        fields=("first", "second", "project"),
                        name="entity_link_unique",
                        nulls_distinct=False,
                    ),
                ),
            ],
        ),
        # Mentions: their memory's project.
        migrations.AddField(
            model_name="entitymention",
            name="project_id",
            field=models.BigIntegerField(blank=True, null=True),
        ),
        sharding.copy_project(
            table="knowledge_entity_mentions",
            sql="UPDATE knowledge_entity_mentions x SET project_id = m.project_id"
            " FROM project_memories m WHERE m.id = x.memory_id AND m.project_id IS NOT NULL"
            " AND x.id >= %(low)s AND x.id < %(high)s AND x.project_id IS NULL",
        ),
        migrations.SeparateDatabaseAndState(
            database_operations=[
                sharding.unique(
                    table="knowledge_entity_mentions",
                    name="mention_unique",
                    columns=["memory_id", "entity_id", "project_id"],
                    old_columns=["memory_id", "entity_id"],
                    nulls_distinct=False,
                )
            ],
            state_operations=[
                migrations.RemoveConstraint(model_name="entitymention", name="mention_unique"),
                migrations.AddConstraint(
                    model_name="entitymention",
                    constraint=models.UniqueConstraint(
                        fields=("memory", "entity", "project_id"),
                        name="mention_unique",
                        nulls_distinct=False,
                    ),
                ),
            ],
        ),
        # Pairs.
        migrations.SeparateDatabaseAndState(
            database_operations=[
                sharding.unique(
                    table="memory_pairs",
                    name="memory_pair_unique",
                    columns=["first_id", "second_id", "project_id"],
                    old_columns=["first_id", "second_id"],
                    nulls_distinct=False,
                )
            ],
            state_operations=[
                migrations.RemoveConstraint(model_name="memorypair", name="memory_pair_unique"),
                migrations.AddConstraint(
                    model_name="memorypair",
                    constraint=models.UniqueConstraint(
                        fields=("first", "second", "project"),
                        name="memory_pair_unique",
                        nulls_distinct=False,
                    ),
                ),
            ],
        ),
    ]
