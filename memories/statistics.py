"""What the table's statistics say about the words of memories: the common ones.

A word that ANALYZE's most common elements of ``match_keys`` put in more than
COMMON_WORD_ROWS rows says little about what a memory is about, and looking memories up by
it would read a posting list that long: assembly ranks with such words but finds no
candidates through them, nor does the search for repeats and conflicts. Words missing from
the statistics are rarer than any listed. The statistics change only when the table is
analysed, so each process reads them at most every COMMON_WORDS_SECONDS (a statement per
request would cost more than it saves)."""

from __future__ import annotations

import time
from typing import Any

from memories import replicas
from memories.models import Memory

MEMORIES = Memory._meta.db_table
COMMON_WORD_ROWS = 2000
COMMON_WORDS_SECONDS = 300.0
# Words in more rows than this are known with their count (``word_rows``): the search for
# repeats and conflicts looks memories up by their rarest words.
KNOWN_WORD_ROWS = 20
# The word keys in more than KNOWN_WORD_ROWS rows by ANALYZE's most common elements.
_COMMON_WORDS = f"""
    SELECT element, frequency * (
            SELECT reltuples FROM pg_class WHERE oid = '{MEMORIES}'::regclass
        ) AS rows
    FROM pg_stats AS stats,
        unnest(stats.most_common_elems::text::text[], stats.most_common_elem_freqs)
            AS common(element, frequency)
    WHERE stats.schemaname = current_schema() AND stats.tablename = '{MEMORIES}'
        AND stats.attname = 'match_keys' AND element LIKE '%%:w:%%'
        AND frequency * (
            SELECT reltuples FROM pg_class WHERE oid = '{MEMORIES}'::regclass
        ) > %s"""
# Read at most every COMMON_WORDS_SECONDS; ``stats`` is for readers' own figures that go
# stale with them (assembly's per-owner counts).
_common_words: dict[str, Any] = {"read_at": None, "by_owner": {}, "stats": {}}


def statistics() -> dict[str, Any]:
    read_at = _common_words["read_at"]
    if read_at is None or time.monotonic() - read_at > COMMON_WORDS_SECONDS:
        known: dict[str, float] = {}
        by_owner: dict[str, dict[str, float]] = {}
        with replicas.read_connection().cursor() as cursor:
            cursor.execute(_COMMON_WORDS, [min(KNOWN_WORD_ROWS, COMMON_WORD_ROWS)])
            for key, rows in cursor.fetchall():
                known[key] = float(rows)
                if rows > COMMON_WORD_ROWS:
                    by_owner.setdefault(key.split(":", 1)[0], {})[key] = float(rows)
        _common_words.update(read_at=time.monotonic(), by_owner=by_owner, known=known, stats={})
    return _common_words


def common_word_keys(owner: str) -> list[str]:
    """The word keys of ``owner`` that bring no candidates (see COMMON_WORD_ROWS)."""
    return sorted(statistics()["by_owner"].get(owner, {}))


def common_word_rows(owner: str) -> dict[str, float]:
    """The common word keys of ``owner`` and the number of memories holding each (estimated
    by ANALYZE): their document frequency, which no request counts."""
    return statistics()["by_owner"].get(owner, {})


def word_rows() -> dict[str, float]:
    """Every word key (of any owner) in more than KNOWN_WORD_ROWS rows, with that number;
    a key not listed is rarer."""
    return statistics().get("known", {})


def forget_common_words() -> None:
    """Read the statistics again at the next request (after ANALYZE, in tests)."""
    _common_words["read_at"] = None
