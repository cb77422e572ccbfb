"""Measure the retention job of conversations: pruning a million messages past their
project's retention (target: under 60 s).

    createdb -h 127.0.0.1 -U postgres memory_conversations
    DATABASE_URL=postgres://postgres@127.0.0.1:5432/memory_conversations \\
        .venv/bin/python bench/conversations.py

The database is migrated, emptied of conversations and seeded set-based (generate_series,
not through the service): ``--old`` messages sent 31 to 120 days ago in conversations of
``--per-conversation`` messages, spread over ``--projects`` projects (retention 30 days),
and ``--recent`` messages of the last week that must stay. With ``--vectors`` each message
also carries a 256-dimension vector, as with the default embedding model. The job then runs
as the beat runs it (policies.conversations.prune_conversations), and the figure reported is
its wall time, checked against what is left.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from datetime import timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

import django

django.setup()

from django.core.management import call_command  # noqa: E402
from django.db import connection  # noqa: E402
from django.utils import timezone  # noqa: E402

from memories.models import MemoryPolicy, Project  # noqa: E402
from people.models import Conversation, Message  # noqa: E402
from policies.conversations import prune_conversations  # noqa: E402

MESSAGES = Message._meta.db_table
CONVERSATIONS = Conversation._meta.db_table

_CONVERSATIONS = f"""
INSERT INTO {CONVERSATIONS}
    (project_id, user_ref, agent_id, title, created_at, last_message_at, message_count)
SELECT p.ids[1 + c %% array_length(p.ids, 1)], 'user-' || (c %% 5000), 'bench-agent', '',
    now() - make_interval(days => %(from_days)s), now() - make_interval(days => %(to_days)s),
    %(per)s
FROM generate_series(1, %(count)s) AS c,
    (SELECT array_agg(id ORDER BY id) AS ids FROM {Project._meta.db_table}
     WHERE slug LIKE 'bench-conversations-%%') AS p
RETURNING id"""
_MESSAGES = f"""
INSERT INTO {MESSAGES}
    (conversation_id, project_id, position, role, content, sent_at, embedding_model, vector)
SELECT c.id, c.project_id, n.position,
    CASE WHEN n.position %% 2 = 0 THEN 'user' ELSE 'assistant' END,
    'Message ' || n.position || ' of conversation ' || c.id
        || ': the deploy of the billing service failed at the migration step again',
    c.last_message_at - make_interval(mins => %(per)s - n.position),
    CASE WHEN %(vectors)s THEN 'wordllama/l2_supercat/256' ELSE '' END,
    CASE WHEN %(vectors)s THEN (SELECT array_agg(random()::real / 16)
        FROM generate_series(1, 256 + 0 * c.id)) END
FROM {CONVERSATIONS} c CROSS JOIN generate_series(0, %(per)s - 1) AS n(position)
WHERE c.id BETWEEN %(first)s AND %(last)s
-- In the order they were said, as a live service writes them.
ORDER BY c.last_message_at - make_interval(mins => %(per)s - n.position)"""


def seed(*, projects: int, old: int, recent: int, per: int, vectors: bool) -> None:
    for number in range(projects):
        project, _ = Project.objects.get_or_create(
            slug=f"bench-conversations-{number}", defaults={"name": f"Bench {number}"}
        )
        MemoryPolicy.objects.update_or_create(
            project=project, defaults={"conversation_retention_days": 30}
        )
    with connection.cursor() as cursor:
        cursor.execute(f"TRUNCATE {MESSAGES}, {CONVERSATIONS}")
        for count, from_days, to_days in ((old // per, 120, 31), (recent // per, 7, 0)):
            started = time.perf_counter()
            cursor.execute(
                _CONVERSATIONS,
                {"count": count, "from_days": from_days, "to_days": to_days, "per": per},
            )
            ids = [row[0] for row in cursor.fetchall()]
            # Spread the old conversations' last messages over 31 to 120 days ago.
            if to_days == 31:
                cursor.execute(
                    f"UPDATE {CONVERSATIONS} SET last_message_at = now()"
                    " - make_interval(days => (31 + id %% 90)::int) WHERE id = ANY(%s)",
                    [ids],
                )
            cursor.execute(
                _MESSAGES, {"per": per, "first": ids[0], "last": ids[-1], "vectors": vectors}
            )
            print(
                f"seeded {count * per:>9,} messages {from_days}-{to_days} days old"
                f" in {time.perf_counter() - started:.1f} s",
                flush=True,
            )
        cursor.execute(f"VACUUM ANALYZE {MESSAGES}")
        cursor.execute(f"VACUUM ANALYZE {CONVERSATIONS}")
        cursor.execute("CHECKPOINT")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--old", type=int, default=1_000_000, help="messages past retention")
    parser.add_argument("--recent", type=int, default=100_000, help="messages to keep")
    parser.add_argument("--per-conversation", type=int, default=50)
    parser.add_argument("--projects", type=int, default=10)
    parser.add_argument("--vectors", action="store_true", help="a 256-dimension vector each")
    args = parser.parse_args()
    call_command("migrate", "--noinput", verbosity=0)
    seed(
        projects=args.projects,
        old=args.old,
        recent=args.recent,
        per=args.per_conversation,
        vectors=args.vectors,
    )
    started = time.perf_counter()
    result = prune_conversations(seconds=600)
    seconds = time.perf_counter() - started
    left_old = Message.objects.filter(sent_at__lt=timezone.now() - timedelta(days=30))
    report = result.report
    print(
        f"pruned {report['messages']:,} messages and {report['conversations']:,} conversations"
        f" in {result.batches} batches: {seconds:.1f} s"
        f" ({report['messages'] / seconds:,.0f} messages/s; target: 1,000,000 in under 60 s)"
    )
    print(
        f"left: {Message.objects.count():,} messages ({left_old.count()} past retention),"
        f" {Conversation.objects.count():,} conversations"
    )


if __name__ == "__main__":
    main()
