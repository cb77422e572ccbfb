"""A stand-in for Claude Code's ``claude mcp add``, for the documentation's examples: instead of
saving the server to a configuration, it connects the way Claude Code then would (over
Streamable HTTP with the given header, or by starting the stdio command with the given
environment), lists the tools, and prints how many it found. It exits non-zero when the
server does not answer as an MCP server."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.request
from typing import Any

PROTOCOL = "2025-06-18"
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": PROTOCOL,
        "capabilities": {},
        "clientInfo": {"name": "claude-stand-in", "version": "0"},
    },
}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}
LIST_TOOLS = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}


def _result(answer: dict[str, Any]) -> dict[str, Any]:
    if "result" not in answer:
        raise SystemExit(f"claude (stand-in): the server answered {answer}")
    return dict(answer["result"])


def _over_http(url: str, headers: dict[str, str]) -> list[str]:
    def post(message: dict[str, Any]) -> dict[str, Any] | None:
        request = urllib.request.Request(
            url,
            data=json.dumps(message).encode(),
            headers={
                "Content-Type": "application/json",
                "Accept": "application/json, text/event-stream",
                "MCP-Protocol-Version": PROTOCOL,
                **headers,
            },
            method="POST",
        )
        with urllib.request.urlopen(request, timeout=30) as response:
            body = response.read()
        return json.loads(body) if body else None

    answer = post(INITIALIZE)
    assert answer is not None
    _result(answer)
    post(INITIALIZED)
    tools = post(LIST_TOOLS)
    assert tools is not None
    return [tool["name"] for tool in _result(tools)["tools"]]


def _over_stdio(command: list[str], env: dict[str, str]) -> list[str]:
    server = subprocess.Popen(
        command,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        env={**os.environ, **env},
        text=True,
    )
    stdin, stdout = server.stdin, server.stdout
    if stdin is None or stdout is None:
        raise SystemExit("claude (stand-in): no pipes to the server")

    def send(message: dict[str, Any]) -> None:
        stdin.write(json.dumps(message) + "\n")
        stdin.flush()

    def answer(number: int) -> dict[str, Any]:
        for line in stdout:
            message = json.loads(line)
            if message.get("id") == number:
                return dict(message)
        raise SystemExit(f"claude (stand-in): {command[0]} stopped before answering")

    try:
        send(INITIALIZE)
        _result(answer(1))
        send(INITIALIZED)
        send(LIST_TOOLS)
        return [tool["name"] for tool in _result(answer(2))["tools"]]
    finally:
        stdin.close()
        server.wait(timeout=30)


def main(argv: list[str]) -> None:
    if argv[:2] != ["mcp", "add"]:
        raise SystemExit("claude (stand-in): only `claude mcp add` is stood in for")
    words, command = argv[2:], []
    if "--" in words:
        words, command = words[: words.index("--")], words[words.index("--") + 1 :]
    options: dict[str, list[str]] = {"--transport": [], "--header": [], "--env": []}
    positional: list[str] = []
    while words:
        word = words.pop(0)
        if word in options:
            options[word].append(words.pop(0))
        else:
            positional.append(word)
    if options["--transport"] == ["http"]:
        name, url = positional
        headers = dict(header.split(": ", 1) for header in options["--header"])
        tools, how = _over_http(url, headers), "over HTTP"
    else:
        (name,) = positional
        env = dict(pair.split("=", 1) for pair in options["--env"])
        tools, how = _over_stdio(command, env), "over stdio"
    print(f"{name}: connected {how}, {len(tools)} tools: {', '.join(sorted(tools))}")


if __name__ == "__main__":
    main(sys.argv[1:])
