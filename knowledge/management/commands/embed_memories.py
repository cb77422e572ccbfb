"""Embed every memory whose vector is missing or stale (new model, words changed while the
model was down), and build the pgvector index where PostgreSQL has the extension."""

from __future__ import annotations

import time
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from knowledge import embeddings


class Command(BaseCommand):
    help = (
        "Embed the memories whose embedding is missing or stale with the configured model "
        "(MEMORY_EMBEDDINGS), then create its pgvector index where the extension is available."
    )

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--batch", type=int, default=embeddings.BATCH_SIZE)
        parser.add_argument(
            "--no-index", action="store_true", help="do not create the pgvector index"
        )

    def handle(self, *args: Any, batch: int, no_index: bool, **options: Any) -> None:
        embedder = embeddings.configured()
        if embedder is None:
            raise CommandError("MEMORY_EMBEDDINGS is off: there is no model to embed with.")
        started = time.monotonic()
        total = 0
        try:
            for written in embeddings.backfill(batch=max(1, batch)):
                total += written
                if options["verbosity"] > 1:
                    self.stdout.write(f"{total} embedded")
        except embeddings.EmbeddingUnavailable as error:
            raise CommandError(
                f"The embedding model failed after {total} memories: {error}"
            ) from error
        seconds = time.monotonic() - started
        rate = f" ({total / seconds:,.0f} a second)" if total and seconds > 0 else ""
        self.stdout.write(
            f"Embedded {total} memories with {embedder.name} in {seconds:.1f} s{rate}."
        )
        if not no_index:
            index = embeddings.create_nearest_index()
            self.stdout.write(
                f"pgvector index: {index}." if index else "pgvector is not available: no index."
            )
