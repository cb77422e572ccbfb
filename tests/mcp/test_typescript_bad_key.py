"""A wrong key seen by the TypeScript SDK's own client (from npm, installed at test time):
its error is our 401 with the message that says what to send, and it looks for no OAuth
metadata (no request to /.well-known/oauth-*)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

pytestmark = pytest.mark.django_db(transaction=True)

SCRIPT = r"""
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const [url, key] = process.argv.slice(2);
const requested = [];
const recording = (input, init) => {
  requested.push(String(input instanceof Request ? input.url : input));
  return fetch(input, init);
};
const transport = new StreamableHTTPClientTransport(new URL(url), {
  fetch: recording,
  requestInit: { headers: { Authorization: `Bearer ${key}` } },
});
const client = new Client({ name: "wrong-key", version: "1.0.0" });
let error = null;
try {
  await client.connect(transport);
} catch (caught) {
  error = { name: caught.constructor.name, code: caught.code ?? null, message: caught.message };
}
await client.close().catch(() => {});
console.log(JSON.stringify({ error, requested }));
"""


@pytest.fixture
def wrong_key_script(typescript_sdk) -> tuple[str, Path]:
    node, folder = typescript_sdk
    script = folder / "wrong_key.mjs"
    script.write_text(SCRIPT)
    return node, script


def test_the_typescript_client_reports_our_401_and_starts_no_oauth_discovery(
    wrong_key_script, live_server
):
    node, script = wrong_key_script
    done = subprocess.run(
        [node, str(script), f"{live_server.url}/mcp", "ml_no_such"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    error = seen["error"]
    assert error is not None, "a wrong key must not connect"
    assert error["code"] == 401
    assert "Unknown or revoked API key: send the project's API key as" in error["message"]
    assert "'Authorization: Bearer <key>'" in error["message"]
    assert seen["requested"] == [f"{live_server.url}/mcp"]
    assert not [url for url in seen["requested"] if "/.well-known/" in url]
