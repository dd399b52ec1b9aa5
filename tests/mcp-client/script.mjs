// An MCP client nobody here wrote: the official TypeScript SDK, talking to a
// Switchboard server over Streamable HTTP with the account's credential
// headers. tests/mcp_client_test.go runs it against the built binary and
// reads what it prints: one JSON object per line, one per step.
//
// Environment: SWITCHBOARD_URL, SWITCHBOARD_API_KEY, SWITCHBOARD_API_SECRET,
// and the conversation it works in: AGENT_NUMBER, USER_NUMBER (a user who
// wrote to the agent number), STRANGER_NUMBER (one who did not) and
// THREAD_ID (their thread).
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const env = (name) => {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set`);
  return value;
};
const print = (step, data) => console.log(JSON.stringify({ step, ...data }));

const transport = new StreamableHTTPClientTransport(new URL("/mcp", env("SWITCHBOARD_URL")), {
  requestInit: {
    headers: { "X-API-Key": env("SWITCHBOARD_API_KEY"), "X-API-Secret": env("SWITCHBOARD_API_SECRET") },
  },
});
const client = new Client({ name: "switchboard-e2e", version: "1.0.0" });
await client.connect(transport);
print("connected", { server: client.getServerVersion()?.name, protocol: transport.protocolVersion });

const { tools } = await client.listTools();
print("tools", { names: tools.map((t) => t.name).sort() });

// callTool checks structured content against the tool's output schema,
// failed calls' included.
const sent = await client.callTool({
  name: "send_message",
  arguments: { service: "whatsapp", from: env("AGENT_NUMBER"), to: env("USER_NUMBER"), text: "Hello from TypeScript" },
});
print("sent", { isError: sent.isError ?? false, result: sent.structuredContent });

const refused = await client.callTool({
  name: "send_message",
  arguments: { service: "whatsapp", from: env("AGENT_NUMBER"), to: env("STRANGER_NUMBER"), text: "Hello?" },
});
print("refused", { isError: refused.isError ?? false, result: refused.structuredContent, text: refused.content?.[0]?.text });

const invalid = await client.callTool({ name: "wait_for_message", arguments: { timeout_seconds: 3600 } });
print("invalid", { isError: invalid.isError ?? false, result: invalid.structuredContent });

const messages = await client.callTool({ name: "get_messages", arguments: { thread_id: env("THREAD_ID") } });
print("messages", { isError: messages.isError ?? false, result: messages.structuredContent });

const marked = await client.callTool({ name: "mark_read", arguments: { thread_id: env("THREAD_ID") } });
print("marked", { isError: marked.isError ?? false, result: marked.structuredContent });

const typing = await client.callTool({ name: "send_typing", arguments: { thread_id: env("THREAD_ID") } });
print("typing", { isError: typing.isError ?? false, result: typing.structuredContent });

// The test sends a message 2 s after it reads this line.
print("waiting", {});
const started = Date.now();
const waited = await client.callTool({ name: "wait_for_message", arguments: { timeout_seconds: 30 } }, undefined, { timeout: 60_000 });
print("waited", { isError: waited.isError ?? false, result: waited.structuredContent, elapsed_ms: Date.now() - started });

const transcript = await client.readResource({ uri: `switchboard://threads/${env("THREAD_ID")}` });
print("transcript", { text: transcript.contents[0].text });

await client.close();
print("closed", {});
