"""``memory-layer-mcp``: the Memory Layer's MCP tools on stdin/stdout, for local agents.

It speaks MCP on stdio and calls a running service over HTTP with a project's key, so the
service may be on this machine or another::

    memory-layer-mcp --url http://127.0.0.1:8000 --key "$MEMORY_LAYER_KEY"

``--url``, ``--key`` and ``--project`` default to ``MEMORY_LAYER_URL``, ``MEMORY_LAYER_KEY``
and ``MEMORY_LAYER_PROJECT`` (the project is found from the key when it has only one).
Nothing but protocol messages is written to stdout; diagnostics go to stderr.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import sys
from collections.abc import Sequence

import anyio

from memory_layer_client.client import AsyncMemoryLayerClient
from memory_layer_client.tools import build_server


def _arguments(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="memory-layer-mcp",
        description="Serve the Memory Layer's MCP tools on stdio, calling a service over HTTP.",
    )
    parser.add_argument(
        "--url",
        default=os.environ.get("MEMORY_LAYER_URL"),
        help="the service, e.g. http://127.0.0.1:8000 (default: $MEMORY_LAYER_URL)",
    )
    parser.add_argument(
        "--key",
        default=os.environ.get("MEMORY_LAYER_KEY"),
        help="the project's API key (default: $MEMORY_LAYER_KEY)",
    )
    parser.add_argument(
        "--project",
        default=os.environ.get("MEMORY_LAYER_PROJECT"),
        help="the project's slug (default: $MEMORY_LAYER_PROJECT, else the key's project)",
    )
    parser.add_argument("--timeout", type=float, default=30.0, help="seconds per API call")
    arguments = parser.parse_args(argv)
    if not arguments.url or not arguments.key:
        parser.error(
            "give the service's --url and the project's --key (or set them in the environment)"
        )
    return arguments


def main(argv: Sequence[str] | None = None) -> None:
    arguments = _arguments(argv)
    logging.basicConfig(
        stream=sys.stderr, level=logging.WARNING, format="%(levelname)s %(message)s"
    )
    client = AsyncMemoryLayerClient(
        arguments.url, arguments.key, project=arguments.project, timeout=arguments.timeout
    )
    server = build_server(lambda: client)

    async def serve() -> None:
        async with client:
            await server.run_stdio_async()

    with contextlib.suppress(KeyboardInterrupt):
        anyio.run(serve)


if __name__ == "__main__":
    main()
