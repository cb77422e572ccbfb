"""Less for a policy job to write per memory. The content-hash index holds active memories
only (consolidation, its one reader, compares active ones); compression walks the active
memories' id index like the other jobs instead of an index of its own; history rows keep
their project without a database constraint (it is the memory's). The new index is built
first, without locking writes out."""

import django.db.models.deletion
from django.contrib.postgres.operations import AddIndexConcurrently, RemoveIndexConcurrently
from django.db import migrations, models


class Migration(migrations.Migration):
    atomic = False

    dependencies = [
        ("memories", "0012_policy_secrets"),
    ]

    operations = [
        AddIndexConcurrently(
            model_name="memory",
            index=models.Index(
                condition=models.Q(("active", True)),
                fields=["project", "type", "content_hash"],
                name="memory_active_hash_idx",
            ),
        ),
        RemoveIndexConcurrently(model_name="memory", name="memory_hash_idx"),
        RemoveIndexConcurrently(model_name="memory", name="memory_compress_walk_idx"),
        migrations.AlterField(
            model_name="memoryevent",
            name="project",
            field=models.ForeignKey(
                blank=True,
                db_constraint=False,
                null=True,
                on_delete=django.db.models.deletion.CASCADE,
                related_name="memory_events",
                to="memories.project",
            ),
        ),
    ]
