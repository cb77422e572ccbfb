import django.db.models.deletion
from django.db import migrations, models

from memories import sharding


class Migration(migrations.Migration):
    """The project in the keys of people's tables (docs/scaling.md): a message names its
    conversation with the project, (project_id, conversation_id) REFERENCES
    (project_id, id), added NOT VALID and then validated while writes go on, in place of
    Django's single-column constraint. The unique constraints that lacked the project end
    with it: a message's place (the project is its conversation's) and a preference for
    every project (NULL in each row it holds, NULLs equal): the same rows are unique.
    Indexes are built without blocking writes."""

    atomic = False

    dependencies = [("people", "0001_initial")]

    operations = [
        sharding.project_foreign_key(
            table="people_message",
            name="message_conversation_in_project",
            column="conversation_id",
            parent="people_conversation",
        ),
        migrations.AlterField(
            model_name="message",
            name="conversation",
            field=models.ForeignKey(
                db_constraint=False,
                db_index=False,
                on_delete=django.db.models.deletion.CASCADE,
                related_name="messages",
                to="people.conversation",
            ),
        ),
        migrations.SeparateDatabaseAndState(
            database_operations=[
                sharding.unique(
                    table="people_message",
                    name="message_one_per_position",
                    columns=["conversation_id", "position", "project_id"],
                    old_columns=["conversation_id", "position"],
                )
            ],
            state_operations=[
                migrations.RemoveConstraint(model_name="message", name="message_one_per_position"),
                migrations.AddConstraint(
                    model_name="message",
                    constraint=models.UniqueConstraint(
                        fields=("conversation", "position", "project"),
                        name="message_one_per_position",
                    ),
                ),
            ],
        ),
        migrations.SeparateDatabaseAndState(
            database_operations=[
                sharding.unique(
                    table="people_preference",
                    name="preference_global_one_per_key",
                    columns=["user_ref", "key", "status", "project_id"],
                    old_columns=["user_ref", "key", "status"],
                    nulls_distinct=False,
                    condition="project_id IS NULL AND NOT status = 'rejected'",
                    constraint=False,
                )
            ],
            state_operations=[
                migrations.RemoveConstraint(
                    model_name="preference", name="preference_global_one_per_key"
                ),
                migrations.AddConstraint(
                    model_name="preference",
                    constraint=models.UniqueConstraint(
                        condition=models.Q(
                            ("project__isnull", True),
                            models.Q(("status", "rejected"), _negated=True),
                        ),
                        fields=("user_ref", "key", "status", "project"),
                        name="preference_global_one_per_key",
                        nulls_distinct=False,
                    ),
                ),
            ],
        ),
    ]
