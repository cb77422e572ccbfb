"""A memory's words: what full-text search, the assembly's text scores and the search for
repeats read (the ``search_vector`` and the ``:w:`` keys of ``match_keys``).

They are PostgreSQL's English lexemes (migration 0020, ``memory_document``) of

* its content and summary, as written;
* the parts of the code names in them, which PostgreSQL's parser keeps whole:
  ``_multipart.py`` also says "multipart", ``MultiDict`` "multi" and "dict",
  ``src/app/routing.py`` "app" and "routing";
* the words of its tags' folders and files (``httpx/_transports/**`` says "httpx" and
  "transports"), without extensions, wildcards and the folder names that say nothing of what
  a file is about (src, lib, test, tests).

A task's words are read the same way: its intent as a memory's text, its write scope as tags
(the files being changed name the task as well as its title does).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from django.db import connection

# At most this many distinct words of an intent and of a write scope are scored.
MAX_INTENT_WORDS = 32
MAX_PATH_WORDS = 24


@dataclass(frozen=True)
class TaskWords:
    intent: tuple[str, ...]
    path: tuple[str, ...]

    @property
    def all(self) -> tuple[str, ...]:
        return tuple(sorted(set(self.intent) | set(self.path)))


def task_words(intent: str, write_scope: Sequence[str]) -> TaskWords:
    """The lexemes of a task's intent and of its write scope's paths (remembered per process:
    they depend on the text only)."""
    return _task_words(intent, tuple(write_scope))


@lru_cache(maxsize=4096)
def _task_words(intent: str, write_scope: tuple[str, ...]) -> TaskWords:
    if not intent.strip() and not write_scope:
        return TaskWords((), ())
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT tsvector_to_array(memory_document(%s::text, '', '{}')),"
            " tsvector_to_array(to_tsvector('pg_catalog.english',"
            " memory_path_words(%s::text[])))",
            [intent, list(write_scope)],
        )
        intent_words, path_words = cursor.fetchone()
    return TaskWords(tuple(intent_words[:MAX_INTENT_WORDS]), tuple(path_words[:MAX_PATH_WORDS]))


def forget_task_words() -> None:
    """Read tasks' words afresh (tests)."""
    _task_words.cache_clear()


def tsquery_literal(word: str) -> str:
    """A lexeme as a one-word tsquery (quoted: taken as it is, whatever it holds)."""
    return "'" + word.replace("\\", "\\\\").replace("'", "''") + "'"
