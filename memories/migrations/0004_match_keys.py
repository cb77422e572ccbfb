import django.contrib.postgres.fields
import django.contrib.postgres.indexes
import django.db.models.functions.comparison
from django.db import migrations, models

from memories.tags import tag_keys

# The owner-prefixed tag keys and content lexemes of a memory (see Memory.match_keys).
CREATE_FUNCTION = """
CREATE FUNCTION memory_match_keys(owner text, tag_keys text[], content text) RETURNS text[]
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    SELECT ARRAY(
        SELECT owner || ':' || key FROM unnest(tag_keys) AS key
        UNION ALL
        SELECT owner || ':w:' || word
        FROM unnest(tsvector_to_array(to_tsvector('pg_catalog.english', content))) AS word
    )
$$
"""
DROP_FUNCTION = "DROP FUNCTION memory_match_keys(text, text[], text)"


def fill_tag_keys(apps, schema_editor):
    Memory = apps.get_model("memories", "Memory")
    batch = []
    for memory in Memory.objects.only("id", "tags").order_by("id").iterator(chunk_size=2000):
        memory.tag_keys = tag_keys(memory.tags)
        batch.append(memory)
        if len(batch) == 2000:
            Memory.objects.bulk_update(batch, ["tag_keys"])
            batch = []
    Memory.objects.bulk_update(batch, ["tag_keys"])


class Migration(migrations.Migration):
    dependencies = [
        ("memories", "0003_assembly_policy"),
    ]

    operations = [
        migrations.AddField(
            model_name="memory",
            name="tag_keys",
            field=django.contrib.postgres.fields.ArrayField(
                base_field=models.TextField(), blank=True, default=list, editable=False, size=None
            ),
        ),
        migrations.RunPython(fill_tag_keys, migrations.RunPython.noop, elidable=True),
        migrations.RunSQL(CREATE_FUNCTION, DROP_FUNCTION),
        migrations.AddField(
            model_name="memory",
            name="match_keys",
            field=models.GeneratedField(
                db_persist=True,
                expression=models.Func(
                    django.db.models.functions.comparison.Coalesce(
                        django.db.models.functions.comparison.Cast(
                            "project_id", models.TextField()
                        ),
                        models.Value("g"),
                    ),
                    models.F("tag_keys"),
                    models.F("content"),
                    function="memory_match_keys",
                    output_field=django.contrib.postgres.fields.ArrayField(
                        base_field=models.TextField(), size=None
                    ),
                ),
                output_field=django.contrib.postgres.fields.ArrayField(
                    base_field=models.TextField(), size=None
                ),
            ),
        ),
        migrations.AddIndex(
            model_name="memory",
            index=django.contrib.postgres.indexes.GinIndex(
                fields=["match_keys"], name="memory_match_keys_gin"
            ),
        ),
    ]
