"""Embeddings: what a memory means, as a unit vector, so that assembly can rank by meaning.

The model is chosen in settings (``MEMORY_EMBEDDINGS``):

* ``local`` (the default): wordllama's 256-dimension model, whose weights and tokenizer
  ship inside its package, so it runs with no network (about 0.2 s to load, tens of
  thousands of short texts a second on one core);
* ``openai``: any OpenAI-compatible ``/v1/embeddings`` endpoint (Ollama, vLLM,
  text-embeddings-inference, OpenAI) at ``MEMORY_EMBEDDINGS_URL`` with
  ``MEMORY_EMBEDDINGS_MODEL`` (and ``MEMORY_EMBEDDINGS_API_KEY``);
* ``off``: no semantic ranking.

Vectors live in a narrow side table (MemoryEmbedding) as ``real[]``, each naming the model
and the ``content_hash`` of the content it was computed from; a row for other words or
another model is stale and no query uses it. The services write a memory's embedding in the
same transaction as its new content (``history.record``); the compression job after each
batch; ``manage.py embed_memories`` (and the ``embeddings`` job) fill in whatever is missing
or stale, e.g. after the model changed or while an endpoint was down. A failing endpoint
never fails a write: the memory is stored and its embedding comes later.

Where PostgreSQL has the ``vector`` extension (pgvector), an HNSW index over the vectors of
the configured model lets assembly also find the memories nearest in meaning to a task that
share no word or tag with it (``nearest_index``); without it, the vectors of the bounded
candidate pool are compared in Python.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import threading
import time
import urllib.error
import urllib.request
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from functools import cache
from pathlib import Path
from typing import Any, Protocol

import numpy as np
from django.conf import settings
from django.core.signals import setting_changed
from django.db import connection

from knowledge.models import MemoryEmbedding
from memories.models import Memory
from memories.statements import server_cursor

logger = logging.getLogger(__name__)
# The tokenizer's threads do not survive a fork (gunicorn's and Celery's workers are forked).
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

MEMORIES = Memory._meta.db_table
EMBEDDINGS = MemoryEmbedding._meta.db_table
BATCH_SIZE = 500
# What a memory is embedded from: the text an agent is given.
_TEXT_CHARS = 4000


class Embedder(Protocol):
    name: str  # names the vector space: vectors of different names are never compared

    def embed(self, texts: Sequence[str], timeout: float | None = None) -> np.ndarray:
        """One unit vector (float32) per text; a remote model gives up after ``timeout``
        seconds (EmbeddingUnavailable)."""


class EmbeddingUnavailable(Exception):
    """The model could not embed (an endpoint down, an answer that makes no sense)."""


def unit(vectors: Any) -> np.ndarray:
    """Rows scaled to length 1 (a zero row stays zero), as float32."""
    array = np.asarray(vectors, dtype=np.float32)
    if array.ndim != 2:
        raise EmbeddingUnavailable(f"expected one vector per text, got shape {array.shape}")
    norms = np.linalg.norm(array, axis=1, keepdims=True)
    return np.divide(array, norms, out=np.zeros_like(array), where=norms > 0)


class LocalEmbedder:
    """wordllama's default model, loaded from its package folder (never downloaded)."""

    name = "wordllama/l2_supercat/256"

    def __init__(self) -> None:
        self._model: Any = None
        self._lock = threading.Lock()

    def _loaded(self) -> Any:
        if self._model is None:
            with self._lock:
                if self._model is None:
                    import wordllama

                    self._model = wordllama.WordLlama.load(
                        cache_dir=Path(wordllama.__file__).parent, disable_download=True
                    )
        return self._model

    def embed(self, texts: Sequence[str], timeout: float | None = None) -> np.ndarray:
        if not texts:
            return np.zeros((0, 256), dtype=np.float32)
        return unit(self._loaded().embed(list(texts), norm=True))


class EndpointEmbedder:
    """An OpenAI-compatible ``POST {url}/embeddings``, in batches."""

    batch = 64

    def __init__(self, url: str, model: str, api_key: str = "", timeout: float = 10.0) -> None:
        self.url = url.rstrip("/") + "/embeddings"
        self.model = model
        self.api_key = api_key
        self.timeout = timeout
        self.name = f"{model}@{url.rstrip('/')}"[:200]

    def _ask(self, texts: Sequence[str], timeout: float) -> list[list[float]]:
        headers = {"Content-Type": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        body = json.dumps({"model": self.model, "input": list(texts)}).encode()
        request = urllib.request.Request(self.url, data=body, headers=headers, method="POST")
        try:
            with urllib.request.urlopen(request, timeout=timeout) as response:
                answer = json.load(response)
            data = sorted(answer["data"], key=lambda item: item["index"])
            vectors = [item["embedding"] for item in data]
        except (OSError, urllib.error.URLError, ValueError, KeyError, TypeError) as error:
            raise EmbeddingUnavailable(f"{self.url}: {error}") from error
        if len(vectors) != len(texts):
            raise EmbeddingUnavailable(f"{self.url}: {len(vectors)} vectors for {len(texts)} texts")
        return vectors

    def embed(self, texts: Sequence[str], timeout: float | None = None) -> np.ndarray:
        limit = self.timeout if timeout is None else max(0.01, min(timeout, self.timeout))
        vectors: list[list[float]] = []
        for start in range(0, len(texts), self.batch):
            vectors += self._ask(texts[start : start + self.batch], limit)
        return unit(vectors) if vectors else np.zeros((0, 0), dtype=np.float32)


@cache
def configured() -> Embedder | None:
    """The model of the settings, or None when semantic ranking is off."""
    if settings.MEMORY_EMBEDDINGS == "off":
        return None
    if settings.MEMORY_EMBEDDINGS == "openai":
        return EndpointEmbedder(
            settings.MEMORY_EMBEDDINGS_URL,
            settings.MEMORY_EMBEDDINGS_MODEL,
            settings.MEMORY_EMBEDDINGS_API_KEY,
            settings.MEMORY_EMBEDDINGS_TIMEOUT,
        )
    return _local()


@cache
def _local() -> LocalEmbedder:
    return LocalEmbedder()  # one loaded model per process, whatever the settings do


def warm() -> None:
    """Load the offline model now (a server does so before it forks its workers)."""
    if isinstance(configured(), LocalEmbedder):
        _local().embed(["warm"])


def _forget(*, setting: str, **kwargs: Any) -> None:
    if setting.startswith("MEMORY_EMBEDDINGS"):
        configured.cache_clear()
        _queries.clear()
        _nearest_index.cache_clear()


setting_changed.connect(_forget)


def memory_text(content: str) -> str:
    return content[:_TEXT_CHARS]


# The tasks' embeddings, remembered per process (a model's answers, never its failures).
QUERIES_KEPT = 2048
_queries: OrderedDict[tuple[str, str], np.ndarray] = OrderedDict()
_queries_lock = threading.Lock()


def query_vector(text: str, *, timeout: float | None = None) -> np.ndarray | None:
    """The embedding of a task's words by the configured model; None when semantic ranking
    is off, the text is empty, or the model cannot answer (within ``timeout`` seconds, for
    an endpoint): the task is then ranked without meaning, and asked again next time."""
    embedder = configured()
    if embedder is None or not text.strip():
        return None
    key = (embedder.name, text)
    with _queries_lock:
        if key in _queries:
            _queries.move_to_end(key)
            return _queries[key]
    try:
        vector = embedder.embed([text], timeout=timeout)[0]
    except EmbeddingUnavailable:
        logger.warning("the embedding model failed; ranking without meaning", exc_info=True)
        return None
    with _queries_lock:
        _queries[key] = vector
        while len(_queries) > QUERIES_KEPT:
            _queries.popitem(last=False)
    return vector


def similarities(query: np.ndarray, stored: Sequence[bytes | None]) -> list[float]:
    """Cosine of ``query`` with each stored vector (as ``array_send`` returns a ``real[]``);
    0 for a memory with no fresh vector or of another length."""
    result = []
    for raw in stored:
        vector = from_array_send(raw) if raw is not None else None
        if vector is None or vector.shape != query.shape:
            result.append(0.0)
        else:
            result.append(float(np.dot(query, vector)))
    return result


# A one-dimensional real[] in PostgreSQL's binary form: ndim, has-nulls, element type, length,
# lower bound (five int32), then per element its length (int32) and value (float4), big-endian.
_ELEMENTS = np.dtype([("length", ">i4"), ("value", ">f4")])


def from_array_send(raw: bytes) -> np.ndarray | None:
    data = bytes(raw)
    if len(data) < 20 or int.from_bytes(data[0:4], "big") != 1:
        return None
    return np.frombuffer(data, dtype=_ELEMENTS, offset=20)["value"].astype(np.float32)


# --- keeping the vectors fresh --------------------------------------------------------------

# The memories of ``ids`` whose vector is missing, stale (other words) or of another model.
_STALE = f"""
    SELECT m.id, m.project_id, m.content, m.content_hash
    FROM {MEMORIES} m LEFT JOIN {EMBEDDINGS} e ON e.memory_id = m.id
    WHERE m.id = ANY(%(ids)s::bigint[])
        AND (e.memory_id IS NULL OR e.model <> %(model)s OR e.content_hash <> m.content_hash)
    ORDER BY m.id"""
# The same, walking the table by id (``embed_memories``); both sides start at the cursor.
_STALE_AFTER = f"""
    SELECT m.id, m.project_id, m.content, m.content_hash
    FROM {MEMORIES} m LEFT JOIN {EMBEDDINGS} e ON e.memory_id = m.id AND e.memory_id > %(after)s
    WHERE m.id > %(after)s
        AND (e.memory_id IS NULL OR e.model <> %(model)s OR e.content_hash <> m.content_hash)
    ORDER BY m.id LIMIT %(batch)s"""
# Written only while the memory still says what was embedded: a vector computed from words
# that an edit has since replaced would otherwise overwrite the fresher one.
_UPSERT = f"""
    INSERT INTO {EMBEDDINGS} (memory_id, project_id, model, content_hash, vector)
    SELECT m.id, m.project_id, %(model)s, m.content_hash, r.vector::real[]
    FROM unnest(%(ids)s::bigint[], %(hashes)s::text[], %(vectors)s::text[])
        AS r(id, content_hash, vector)
    JOIN {MEMORIES} m ON m.id = r.id AND m.content_hash = r.content_hash
    ON CONFLICT (memory_id) DO UPDATE SET project_id = EXCLUDED.project_id,
        model = EXCLUDED.model, content_hash = EXCLUDED.content_hash, vector = EXCLUDED.vector"""


def vector_text(vector: np.ndarray, brackets: str = "{}") -> str:
    """A vector as PostgreSQL reads it: ``{...}`` for a ``real[]``, ``[...]`` for pgvector."""
    return brackets[0] + ",".join(f"{x:.6g}" for x in vector.tolist()) + brackets[1]


def _store(rows: Sequence[tuple[int, int | None, str, str]], embedder: Embedder) -> int:
    if not rows:
        return 0
    vectors = embedder.embed([memory_text(content) for _, _, content, _ in rows])
    with server_cursor() as cursor:
        cursor.execute(
            _UPSERT,
            {
                "model": embedder.name,
                "ids": [row[0] for row in rows],
                "hashes": [row[3] for row in rows],
                "vectors": [vector_text(vector) for vector in vectors],
            },
        )
        return cursor.rowcount


def refresh(memory_ids: Sequence[int]) -> int:
    """Embed the memories of ``memory_ids`` whose vector is missing or stale; how many were
    written. A model that cannot answer is logged, and the write goes on without them."""
    embedder = configured()
    ids = sorted(set(memory_ids))
    if embedder is None or not ids:
        return 0
    written = 0
    try:
        for start in range(0, len(ids), BATCH_SIZE):
            with connection.cursor() as cursor:
                cursor.execute(
                    _STALE, {"ids": ids[start : start + BATCH_SIZE], "model": embedder.name}
                )
                rows = cursor.fetchall()
            written += _store(rows, embedder)
    except EmbeddingUnavailable:
        logger.warning(
            "the embedding model failed; %d memories wait for embed_memories",
            len(ids),
            exc_info=True,
        )
    return written


def backfill(*, batch: int = BATCH_SIZE, seconds: float | None = None) -> Iterator[int]:
    """Embed every memory whose vector is missing or stale, a batch per transaction, walking
    the table by id; yields how many each batch wrote. Stops after ``seconds`` if given.
    Raises EmbeddingUnavailable when the model cannot answer."""
    embedder = configured()
    if embedder is None:
        return
    after = 0
    started = time.monotonic()
    while seconds is None or time.monotonic() - started < seconds:
        with connection.cursor() as cursor:
            cursor.execute(_STALE_AFTER, {"after": after, "model": embedder.name, "batch": batch})
            rows = cursor.fetchall()
        if not rows:
            return
        after = rows[-1][0]
        yield _store(rows, embedder)


# --- pgvector -----------------------------------------------------------------------------------


def _index_name(embedder: Embedder) -> str:
    return "memory_embedding_hnsw_" + hashlib.sha256(embedder.name.encode()).hexdigest()[:12]


def create_nearest_index(dimensions: int | None = None) -> str | None:
    """Where PostgreSQL offers pgvector: install it and build an HNSW index over the vectors
    of the configured model (cosine distance); the index's name, or None without pgvector
    (or with semantic ranking off). Idempotent."""
    embedder = configured()
    if embedder is None or not vector_available():
        return None
    if dimensions is None:
        dimensions = len(embedder.embed(["dimensions"])[0])
    name = _index_name(embedder)
    with connection.cursor() as cursor:
        cursor.execute("CREATE EXTENSION IF NOT EXISTS vector")
        cursor.execute(
            f"CREATE INDEX IF NOT EXISTS {name} ON {EMBEDDINGS}"
            f" USING hnsw ((vector::vector({int(dimensions)})) vector_cosine_ops)"
            f" WHERE model = %s",
            [embedder.name],
        )
    _nearest_index.cache_clear()
    return name


def vector_available() -> bool:
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1 FROM pg_available_extensions WHERE name = 'vector'")
        return cursor.fetchone() is not None


def nearest_index() -> tuple[str, int] | None:
    """The configured model's name and dimensions when its HNSW index exists (read once per
    process), else None: then no query asks for the nearest memories by vector."""
    embedder = configured()
    if embedder is None:
        return None
    dimensions = _nearest_index(embedder.name, _index_name(embedder))
    return (embedder.name, dimensions) if dimensions else None


@cache
def _nearest_index(model: str, name: str) -> int:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pg_get_indexdef(c.oid) FROM pg_class c"
            " WHERE c.relname = %s AND c.relkind = 'i' AND pg_table_is_visible(c.oid)",
            [name],
        )
        row = cursor.fetchone()
    if row is None:
        return 0
    # "... USING hnsw (((vector)::vector(256)) vector_cosine_ops) WHERE ..."
    definition = str(row[0])
    start = definition.find("::vector(") + len("::vector(")
    return int(definition[start : definition.index(")", start)])


def forget_nearest_index() -> None:
    _nearest_index.cache_clear()
