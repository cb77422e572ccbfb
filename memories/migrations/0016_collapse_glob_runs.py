"""Stored tag regexes written before runs of ``**`` segments were collapsed (memories.tags):
recomputed, so that no stored pattern costs more to match than the same glob written once.
Only memories with such a run are read (few, if any)."""

from django.db import migrations


def collapse(apps, schema_editor):
    from memories.tags import tag_patterns

    table = apps.get_model("memories", "Memory")._meta.db_table
    with schema_editor.connection.cursor() as cursor:
        cursor.execute(
            f"SELECT id, tags FROM {table} WHERE array_to_string(tags, ' ') ~ %s",
            [r"\*\*/\*\*|\*\*\*"],
        )
        for memory_id, tags in cursor.fetchall():
            cursor.execute(
                f"UPDATE {table} SET tag_patterns = %s WHERE id = %s",
                [tag_patterns(tags), memory_id],
            )


class Migration(migrations.Migration):
    dependencies = [("memories", "0015_embeddings")]

    operations = [migrations.RunPython(collapse, migrations.RunPython.noop)]
