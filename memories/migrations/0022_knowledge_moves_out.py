"""Embeddings and pairs leave the store for the knowledge layer (knowledge 0001): in Django's
state only, the tables stay; their content types follow them, so that permissions and the
admin's log keep pointing at them."""

from django.db import migrations

MOVED = ["memorypair", "memoryembedding"]


def content_types_follow(apps, schema_editor):
    ContentType = apps.get_model("contenttypes", "ContentType")
    there = set(
        ContentType.objects.filter(app_label="knowledge", model__in=MOVED).values_list(
            "model", flat=True
        )
    )
    ContentType.objects.filter(app_label="memories", model__in=set(MOVED) - there).update(
        app_label="knowledge"
    )


def content_types_return(apps, schema_editor):
    ContentType = apps.get_model("contenttypes", "ContentType")
    ContentType.objects.filter(app_label="knowledge", model__in=MOVED).update(app_label="memories")


class Migration(migrations.Migration):
    dependencies = [
        ("memories", "0021_run_feedback"),
        ("knowledge", "0001_initial"),
        ("contenttypes", "0002_remove_content_type_name"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.RemoveField(
                    model_name="memorypair",
                    name="first",
                ),
                migrations.RemoveField(
                    model_name="memorypair",
                    name="outcome_memory",
                ),
                migrations.RemoveField(
                    model_name="memorypair",
                    name="project",
                ),
                migrations.RemoveField(
                    model_name="memorypair",
                    name="resolved_by",
                ),
                migrations.RemoveField(
                    model_name="memorypair",
                    name="second",
                ),
                migrations.DeleteModel(
                    name="MemoryEmbedding",
                ),
                migrations.DeleteModel(
                    name="MemoryPair",
                ),
            ],
            database_operations=[],
        ),
        migrations.RunPython(content_types_follow, content_types_return),
    ]
