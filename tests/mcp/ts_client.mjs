// An agent written against the official TypeScript SDK: it lists the MCP server's tools and
// calls every one of them, over Streamable HTTP (/mcp with a Bearer key) or over stdio (the
// Python client package's memory-layer-mcp), and prints what it saw as one JSON object.
//
//   node ts_client.mjs '{"transport": "http", "url": "...", "key": "...",
//                        "conflictId": 1, "changedMemoryId": 2, "command": "..."}'
//
// A call the SDK refuses (for instance structured content that does not match the tool's
// output schema) is recorded as {"thrown": message}, so the caller can say which call it was.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const args = JSON.parse(process.argv[2]);

function transportFor({ transport, url, key, command }) {
  if (transport === "http") {
    return new StreamableHTTPClientTransport(new URL(`${url}/mcp`), {
      requestInit: { headers: { Authorization: `Bearer ${key}` } },
    });
  }
  if (transport === "stdio") {
    return new StdioClientTransport({ command, args: ["--url", url, "--key", key] });
  }
  throw new Error(`unknown transport ${transport}`);
}

const client = new Client({ name: "memory-layer-ts-test", version: "1.0.0" });
await client.connect(transportFor(args));

const seen = { calls: {} };

async function call(label, name, toolArguments) {
  try {
    const result = await client.callTool({ name, arguments: toolArguments });
    seen.calls[label] = {
      isError: result.isError ?? false,
      content: result.content,
      structuredContent: result.structuredContent ?? null,
    };
    return result.structuredContent ?? {};
  } catch (error) {
    seen.calls[label] = { thrown: error instanceof Error ? error.message : String(error) };
    return {};
  }
}

try {
  seen.server = client.getServerVersion();
  seen.tools = (await client.listTools()).tools; // also what callTool validates results against

  const started = await call("start_run", "start_run", {
    external_id: "task-ts-1",
    write_scope: ["src/db/**"],
  });
  const runId = started.id;
  const stored = await call("remember", "remember", {
    type: "warning",
    content: "Never run migrations against the read replica.",
    tags: ["src/db/**"],
    run_id: runId,
  });
  const memoryId = stored.id;
  await call("recall", "recall", {
    intent: "add a migration",
    write_scope: ["src/db/models.py"],
    run_id: runId,
  });
  await call("search_memories", "search_memories", { query: "replica" });
  await call("get_memory", "get_memory", { memory_id: memoryId });
  await call("flag_memory", "flag_memory", {
    memory_id: memoryId,
    reason: "The replica was retired.",
  });
  await call("report_outcome", "report_outcome", {
    run_id: runId,
    outcome: "succeeded",
    used_memory_ids: [memoryId],
  });
  await call("report_changes", "report_changes", {
    ref: "a1b2c3d",
    paths: ["src/cache/client.py"],
  });
  await call("list_conflicts", "list_conflicts", {});
  await call("get_conflict", "get_conflict", { conflict_id: args.conflictId });
  await call("resolve_conflict", "resolve_conflict", {
    conflict_id: args.conflictId,
    action: "dismiss",
    reason: "Two services.",
  });
  await call("memory_history", "memory_history", { memory_id: args.changedMemoryId });
  await call("related", "related", { name: "src/db" });
  await call("set_preference", "set_preference", {
    user_id: "u-7",
    key: "language",
    value: { answers: "de" },
    category: "style",
  });
  await call("get_preferences", "get_preferences", { user_id: "u-7" });
  const saved = await call("save_conversation", "save_conversation", {
    agent_id: "ts-agent",
    user_id: "user-7",
    messages: [{ role: "user", content: "Always use the staging replica for reports." }],
  });
  const conversationId = saved.id;
  await call("append_messages", "append_messages", {
    conversation_id: conversationId,
    messages: [{ role: "assistant", content: "Noted: reports read the staging replica." }],
  });
  await call("get_conversation", "get_conversation", { conversation_id: conversationId });
  await call("search_conversations", "search_conversations", {
    query: "staging replica reports",
    user_id: "user-7",
  });
  await call("distill_conversation", "distill_conversation", { conversation_id: conversationId });
  // A name guessed from the REST API's camelCase: the tool says which one it means.
  await call("unknown_argument", "recall", {
    intent: "add a migration",
    writeScope: ["src/db/models.py"],
  });
  Object.assign(seen, { runId, memoryId, conversationId });
} finally {
  await client.close();
}

process.stdout.write(`${JSON.stringify(seen)}\n`);
