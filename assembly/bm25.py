"""BM25 of a task's words in the candidate query (assembly.candidates): each word's rarity
in the source's owner (its IDF), and the SQL that scores a memory's words with it.

A word's document frequency is ANALYZE's estimate where the statistics list it, else it is
counted through the match-key index (up to DF_COUNTED), once per version of the owner's
memories (assembly.cache: any write gives a new one) and process. An owner's number of
memories and their mean length are read at most every COMMON_WORDS_SECONDS per process.
"""

from __future__ import annotations

import json
import math
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from memories import replicas
from memories.models import Memory
from memories.statistics import common_word_rows, statistics, word_rows
from memories.words import TaskWords, tsquery_literal

MEMORIES = Memory._meta.db_table


# Each owner's number of active memories and their mean number of distinct words (BM25's N
# and average length), read at most every COMMON_WORDS_SECONDS per process as well, from at
# most OWNER_SAMPLE rows: an owner with more has its count estimated by the planner (from the
# table's statistics), so the cost does not grow with the project.
OWNER_SAMPLE = 10000
_OWNER_STATS = f"""
    SELECT count(*), coalesce(avg(length(s.search_vector)), 1) FROM (
        SELECT m.search_vector FROM {MEMORIES} m WHERE m.active AND {{owner}}
        LIMIT {{sample}}) AS s"""
_OWNER_ESTIMATE = f"EXPLAIN (FORMAT JSON) SELECT 1 FROM {MEMORIES} m WHERE m.active AND {{owner}}"


def owner_stats(owner: str) -> tuple[int, float]:
    """``owner``'s number of active memories and mean number of distinct words (both from at
    most OWNER_SAMPLE rows; beyond, the number is the planner's estimate)."""
    stats = statistics()["stats"]
    if owner not in stats:
        condition = "m.project_id IS NULL" if owner == "g" else "m.project_id = %s"
        values = [] if owner == "g" else [int(owner)]
        with replicas.read_connection().cursor() as cursor:
            cursor.execute(_OWNER_STATS.format(owner=condition, sample=OWNER_SAMPLE), values)
            count, mean_length = cursor.fetchone()
            if count >= OWNER_SAMPLE:
                cursor.execute(_OWNER_ESTIMATE.format(owner=condition), values)
                plan = cursor.fetchone()[0]
                plan = json.loads(plan) if isinstance(plan, str) else plan
                count = max(count, int(plan[0]["Plan"]["Plan Rows"]))
        stats[owner] = (int(count), max(float(mean_length), 1.0))
    return stats[owner]


# BM25 (Okapi): each word of the task weighs by its rarity in the source's owner (IDF from
# its document frequency: ANALYZE's estimate for a word it lists, else the rows holding it,
# counted up to DF_COUNTED through the match-key index), and by how often the memory says it
# against the memory's length.
BM25_K1 = 1.2
BM25_B = 0.75
DF_COUNTED = 500
# A word's memories, counted up to DF_COUNTED through the match-key index. Each key is a
# parameter of its own, so that PostgreSQL plans the count for that very key (a key the
# statistics do not list is rare: an index lookup, never a scan stopped at the limit).
_DF_COUNT = (
    f"(SELECT count(*) FROM (SELECT 1 FROM {MEMORIES} d"
    " WHERE d.match_keys @> %({key})s::text[] AND d.active LIMIT " + str(DF_COUNTED) + ") AS x)"
)
# Counted frequencies, kept per process for the owner's version of its memories (assembly
# .cache: any write gives the owner a new one), so that a word is counted once per version;
# forgotten with the statistics (every COMMON_WORDS_SECONDS), so that no version a cache
# flush brings back ("0") is trusted longer.
DF_KEPT_VERSIONS = 256
_counted_lock = threading.Lock()


def _counted() -> OrderedDict[tuple[str, str], dict[str, float]]:
    kept: OrderedDict[tuple[str, str], dict[str, float]] = statistics()["stats"].setdefault(
        "counted", OrderedDict()
    )
    return kept


@dataclass(frozen=True)
class Term:
    """A word of the task: its IDF in the source's owner, and whether the intent and whether
    the write scope say it."""

    word: str
    idf: float
    df: float
    intent: bool
    path: bool


def document_frequencies(
    owner: str, words: Sequence[str], version: str | None = None
) -> dict[str, float]:
    """How many of ``owner``'s active memories hold each word: ANALYZE's estimate where it
    has one, else counted (up to DF_COUNTED) in one statement, and remembered for the
    owner's ``version`` when it is known."""
    common = common_word_rows(owner)
    known = word_rows()
    found: dict[str, float] = {}
    missing: list[str] = []
    counted_by_version = _counted()
    with _counted_lock:
        kept = counted_by_version.get((owner, version), {}) if version else {}
    for word in words:
        key = f"{owner}:w:{word}"
        df = common.get(key) or known.get(key) or kept.get(word)
        if df is None:
            missing.append(word)
        else:
            found[word] = float(df)
    if missing:
        params = {f"k{j}": [f"{owner}:w:{word}"] for j, word in enumerate(missing)}
        counts = ", ".join(_DF_COUNT.format(key=f"k{j}") for j in range(len(missing)))
        with replicas.read_connection().cursor() as cursor:
            cursor.execute(f"SELECT ARRAY[{counts}]", params)
            counted = dict(zip(missing, map(float, cursor.fetchone()[0]), strict=True))
        found.update(counted)
        if version:
            with _counted_lock:
                counted_by_version.setdefault((owner, version), {}).update(counted)
                counted_by_version.move_to_end((owner, version))
                while len(counted_by_version) > DF_KEPT_VERSIONS:
                    counted_by_version.popitem(last=False)
    return found


def task_terms(owner: str, words: TaskWords, version: str | None = None) -> list[Term]:
    """The task's words with their IDF in ``owner`` (whose ``version`` of its memories,
    when known, lets counted frequencies be reused)."""
    docs = float(max(owner_stats(owner)[0], 1))
    frequencies = document_frequencies(owner, words.all, version)
    intent, path = set(words.intent), set(words.path)
    return [
        Term(
            word,
            round(math.log(1 + (docs - df + 0.5) / (df + 0.5)), 9),
            df,
            word in intent,
            word in path,
        )
        for word, df in ((word, frequencies[word]) for word in words.all)
    ]


def length_norm(i: int) -> str:
    """BM25's saturation of one occurrence in memory ``m`` for its length."""
    return (
        f"{BM25_K1 + 1} / (1 + {BM25_K1} * ({1 - BM25_B} + {BM25_B}"
        f" * length(m.search_vector) / %(avgdl_{i})s::float8))"
    )


# Words of each part the first estimate counts (its rarest): always this many slots, empty
# ones weighing 0, so that the statement's text is the same whatever the task.
SLOTS = {"intent": 10, "path": 6}


def presence(i: int, terms: Sequence[Term], part: str, params: dict[str, Any]) -> str:
    """BM25 of ``part`` (intent or path) counting each of its rarest words once: a memory
    holds it or not (one probe of its search vector a word; the shortlist's first
    estimate)."""
    chosen = sorted(
        (term for term in terms if getattr(term, part)), key=lambda t: (-t.idf, t.word)
    )[: SLOTS[part]]
    sums = []
    for slot in range(SLOTS[part]):
        term = chosen[slot] if slot < len(chosen) else None
        params[f"{part}_q_{i}_{slot}"] = tsquery_literal(term.word if term else "-")
        params[f"{part}_idf_{i}_{slot}"] = term.idf if term else 0.0
        sums.append(
            f"CASE WHEN m.search_vector @@ %({part}_q_{i}_{slot})s::tsquery"
            f" THEN %({part}_idf_{i}_{slot})s::float8 ELSE 0 END"
        )
    return f"(({' + '.join(sums)}) * {length_norm(i)})"


def exact(i: int) -> str:
    """BM25 of the intent's and of the write scope's words with their counts in shortlisted
    memory ``s``."""
    saturation = (
        f"t.idf * cardinality(u.positions) * {BM25_K1 + 1} / (cardinality(u.positions)"
        f" + {BM25_K1} * ({1 - BM25_B} + {BM25_B}"
        f" * length(s.search_vector) / %(avgdl_{i})s::float8))"
    )
    return (
        f"(SELECT coalesce(sum({saturation}) FILTER (WHERE t.intent), 0) AS intent,"
        f" coalesce(sum({saturation}) FILTER (WHERE t.path), 0) AS path"
        f" FROM unnest(s.search_vector) AS u JOIN unnest(%(t_word_{i})s::text[],"
        f" %(t_idf_{i})s::float8[], %(t_intent_{i})s::bool[], %(t_path_{i})s::bool[])"
        " AS t(word, idf, intent, path) ON t.word = u.lexeme)"
    )
