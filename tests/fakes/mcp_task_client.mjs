// A real MCP client for the guard's task tests: the official TypeScript SDK's Client, whose experimental tasks API
// runs a tools/call as a task (MCP 2025-11-25: the CreateTaskResult, tasks/get polls, then tasks/result). The
// Python SDK's client (mcp 2.3) cannot: it validates a tools/call answer as a CallToolResult only.
//
// node mcp_task_client.mjs CONFIG_JSON, where CONFIG_JSON is
//   {"sdk": "<node_modules>/@modelcontextprotocol/sdk", "command": ["prog", "arg", ...],
//    "calls": [{"name": "...", "arguments": {...}, "task": true, "cancel": false}, ...]}
// Prints one JSON line per call: {"name", "kind": "result" | "error", "isError", "text", "taskId", "statuses"};
// with "cancel", the task is cancelled (tasks/cancel) as soon as it is created, and its result never fetched.
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const config = JSON.parse(process.argv[2]);
const load = (part) => import(pathToFileURL(join(config.sdk, "dist", "esm", part)).href);
const { Client } = await load("client/index.js");
const { StdioClientTransport } = await load("client/stdio.js");

const transport = new StdioClientTransport({
  command: config.command[0],
  args: config.command.slice(1),
  env: process.env,
  stderr: "inherit",
});
const client = new Client({ name: "task-client", version: "1.0.0" }, { capabilities: {} });
await client.connect(transport);
await client.listTools();

const textOf = (result) =>
  (result.content || []).filter((b) => b.type === "text").map((b) => b.text).join("\n");

for (const call of config.calls) {
  const line = { name: call.name, kind: "error", isError: null, text: "", taskId: null, statuses: [] };
  const params = { name: call.name, arguments: call.arguments || {} };
  try {
    if (!call.task) {
      const result = await client.callTool(params);
      Object.assign(line, { kind: "result", isError: Boolean(result.isError), text: textOf(result) });
    } else {
      const options = { task: { ttl: 60000 } };
      for await (const message of client.experimental.tasks.callToolStream(params, undefined, options)) {
        if (message.type === "taskCreated") {
          line.taskId = message.task.taskId;
          if (call.cancel) {
            const cancelled = await client.experimental.tasks.cancelTask(message.task.taskId);
            Object.assign(line, { kind: "cancelled", text: cancelled.status });
            break;
          }
        } else if (message.type === "taskStatus") {
          line.statuses.push(message.task.status);
        } else if (message.type === "result") {
          Object.assign(line, { kind: "result", isError: Boolean(message.result.isError), text: textOf(message.result) });
        } else if (message.type === "error") {
          line.text = String(message.error && message.error.message);
        }
      }
    }
  } catch (error) {
    line.text = String(error && error.message);
  }
  console.log(JSON.stringify(line));
}
await client.close();
