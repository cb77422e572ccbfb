"""Each pair's priority (knowledge.keep.priority: how likely times how consequential), the
review queue's order, with an index for it; the open pairs already found get theirs."""

from django.db import migrations, models

# The open pairs found before: their finding's strength (a conflict 0.6 where none was
# recorded, a repeat 0.5) times the weightier memory's weight (knowledge.keep.WEIGHT_SQL,
# fixed here as it is today).
PRIORITIES = """
UPDATE memory_pairs p SET priority = round((
    CASE WHEN p.kind = 'repeat' THEN 0.5
        ELSE coalesce((p.evidence->>'strength')::float, 0.6) END
    * greatest(w.first, w.second))::numeric, 4)
FROM (
    SELECT q.id,
        (SELECT {weight} FROM project_memories m WHERE m.id = q.first_id) AS first,
        (SELECT {weight} FROM project_memories m WHERE m.id = q.second_id) AS second
    FROM memory_pairs q WHERE q.status = 'open'
) AS w
WHERE p.id = w.id AND w.first IS NOT NULL AND w.second IS NOT NULL
"""
WEIGHT = """(m.confidence
    * CASE m.type WHEN 'warning' THEN 1.0 WHEN 'pattern' THEN 0.9 WHEN 'context' THEN 0.8
        ELSE 0.7 END
    * CASE m.tier WHEN 'hot' THEN 1.0 WHEN 'warm' THEN 0.85 WHEN 'cold' THEN 0.7 ELSE 0.5 END
    * (1 + least(1.0, log(1 + m.access_count) / 3)))"""


class Migration(migrations.Migration):
    dependencies = [
        ("knowledge", "0003_judge_answers"),
        ("memories", "0023_run_memories_declared_on_memory"),
    ]

    operations = [
        migrations.AddField(
            model_name="memorypair",
            name="priority",
            field=models.FloatField(default=0.0, db_default=0.0),
        ),
        migrations.AddIndex(
            model_name="memorypair",
            index=models.Index(
                fields=["project", "status", "-priority", "-id"], name="pair_queue_idx"
            ),
        ),
        migrations.RunSQL(PRIORITIES.format(weight=WEIGHT), migrations.RunSQL.noop),
    ]
