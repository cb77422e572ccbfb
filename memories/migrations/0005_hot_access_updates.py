from django.db import migrations


class Migration(migrations.Migration):
    """Every context assembly bumps access_count and last_accessed_at of what it chose. With
    neither column indexed and room left on each page, PostgreSQL updates those rows in
    place (HOT), without a new entry in every index of the table (GIN ones included)."""

    dependencies = [
        ("memories", "0004_match_keys"),
    ]

    operations = [
        migrations.RemoveIndex(model_name="memory", name="memory_lru_idx"),
        migrations.RunSQL(
            "ALTER TABLE project_memories SET (fillfactor = 70)",
            "ALTER TABLE project_memories RESET (fillfactor)",
        ),
    ]
