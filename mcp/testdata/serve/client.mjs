// A host for the end-to-end test of `myelin mcp serve`
// (mcp/serve_e2e_test.go): the Node MCP SDK's client, as a host built on
// it uses it, over stdio or streamable HTTP, driven one call a line.
//
//   node client.mjs stdio COMMAND [ARG...]   starts the server itself
//   node client.mjs http URL                 connects to a running one
//
// MCP_SDK names the SDK's directory: the @modelcontextprotocol/sdk that
// mcp/testdata/conformance/node_modules holds (npm ci there installs it).
// The client lists the tools and prints them as its first line, then
// reads one call a line on stdin, {"name": ..., "arguments": {...}}, and
// prints one line for each: {"result": CallToolResult} or {"error": why}.
// Its callTool checks the structuredContent of each result against the
// tool's outputSchema, as any host on the SDK does, and fails the call
// when it does not fit or when a tool with an outputSchema gives none.
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { pathToFileURL } from 'node:url';

const sdk = process.env.MCP_SDK;
if (!sdk) {
  console.error('client.mjs: MCP_SDK must name the directory of @modelcontextprotocol/sdk');
  process.exit(2);
}
const load = (file) => import(pathToFileURL(join(sdk, 'dist', 'esm', file)).href);
const { Client } = await load('client/index.js');

const [mode, ...rest] = process.argv.slice(2);
let transport;
if (mode === 'stdio' && rest.length > 0) {
  const { StdioClientTransport } = await load('client/stdio.js');
  transport = new StdioClientTransport({ command: rest[0], args: rest.slice(1), stderr: 'inherit' });
} else if (mode === 'http' && rest.length === 1) {
  const { StreamableHTTPClientTransport } = await load('client/streamableHttp.js');
  transport = new StreamableHTTPClientTransport(new URL(rest[0]));
} else {
  console.error('usage: client.mjs stdio COMMAND [ARG...] | client.mjs http URL');
  process.exit(2);
}

const write = (v) => process.stdout.write(JSON.stringify(v) + '\n');

const client = new Client({ name: 'myelin-e2e-node', version: '1.0.0' });
await client.connect(transport);
const { tools } = await client.listTools(); // and keeps each tool's outputSchema, to check results against
write({ tools: tools.map((t) => ({ name: t.name, outputSchema: t.outputSchema ?? null })) });

for await (const line of createInterface({ input: process.stdin })) {
  if (line.trim() === '') continue;
  const { name, arguments: args } = JSON.parse(line);
  try {
    // A 200 MB command takes seconds; the SDK's default bound is 60 s.
    const result = await client.callTool({ name, arguments: args }, undefined, { timeout: 300_000 });
    write({ result });
  } catch (e) {
    write({ error: String(e?.message ?? e) });
  }
}
await client.close();
