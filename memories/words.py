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

import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass

from memories import replicas

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


# Words read so far, per process (they depend on the text only): of intents, and of single
# paths of write scopes (scopes vary more than the paths they are made of).
_KEPT = 8192
_intents: OrderedDict[str, tuple[str, ...]] = OrderedDict()
_paths: OrderedDict[str, tuple[str, ...]] = OrderedDict()
_lock = threading.Lock()


def task_words(intent: str, write_scope: Sequence[str]) -> TaskWords:
    """The lexemes of a task's intent and of its write scope's paths: what this process has
    not read yet is read in one statement."""
    paths = list(dict.fromkeys(path for path in write_scope if path))
    with _lock:
        said = _intents.get(intent)
        known = {path: _paths[path] for path in paths if path in _paths}
    unknown = [path for path in paths if path not in known]
    if said is None or unknown:
        with replicas.read_connection().cursor() as cursor:
            cursor.execute(
                "SELECT tsvector_to_array(memory_document(%s::text, '', '{}')),"
                " ARRAY(SELECT array_to_string(tsvector_to_array(to_tsvector("
                "'pg_catalog.english', memory_path_words(ARRAY[path]))), ' ')"
                " FROM unnest(%s::text[]) WITH ORDINALITY AS p(path, n) ORDER BY n)",
                [intent, unknown],
            )
            intent_words, path_words = cursor.fetchone()
        said = tuple(intent_words)
        read = {path: tuple(words.split()) for path, words in zip(unknown, path_words, strict=True)}
        known.update(read)
        with _lock:
            _remember(_intents, {intent: said})
            _remember(_paths, read)
    path_words = sorted({word for path in paths for word in known[path]})
    return TaskWords(said[:MAX_INTENT_WORDS], tuple(path_words[:MAX_PATH_WORDS]))


def _remember(kept: OrderedDict[str, tuple[str, ...]], read: dict[str, tuple[str, ...]]) -> None:
    for text, words in read.items():
        kept[text] = words
        kept.move_to_end(text)
    while len(kept) > _KEPT:
        kept.popitem(last=False)


def forget_task_words() -> None:
    """Read tasks' words afresh (tests)."""
    with _lock:
        _intents.clear()
        _paths.clear()


def tsquery_literal(word: str) -> str:
    """A lexeme as a one-word tsquery (quoted: taken as it is, whatever it holds)."""
    return "'" + word.replace("\\", "\\\\").replace("'", "''") + "'"
