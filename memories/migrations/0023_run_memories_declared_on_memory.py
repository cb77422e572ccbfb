"""The many-to-many between runs and memories (through RunMemory) is declared on Memory
(``Memory.runs``, ``run.memories`` the other way) instead of on Run, so that the run's
module imports nothing of the memory's. State only: the relation lives in RunMemory's table,
which is unchanged."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("memories", "0022_knowledge_moves_out"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.RemoveField(model_name="run", name="memories"),
                migrations.AddField(
                    model_name="memory",
                    name="runs",
                    field=models.ManyToManyField(
                        blank=True,
                        related_name="memories",
                        through="memories.RunMemory",
                        to="memories.run",
                    ),
                ),
            ],
            database_operations=[],
        ),
    ]
