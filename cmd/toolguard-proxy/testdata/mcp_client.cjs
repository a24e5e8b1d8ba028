// The official MCP TypeScript SDK's client (@modelcontextprotocol/sdk), as
// a TypeScript or JavaScript host uses it, against toolguard-proxy. Run by
// mcp_node_test.go:
//
//   NODE_PATH=<dir>/node_modules MCP_CALLS='[{"name":…,"arguments":…},…]' node mcp_client.cjs http URL
//   NODE_PATH=<dir>/node_modules MCP_CALLS='[…]' node mcp_client.cjs stdio CMD ARGS…
//
// It connects (Streamable HTTP, or stdio to a command it starts), makes
// the calls in order, and prints one JSON line: what the client read of
// each call.
'use strict';

const { Client } = require('@modelcontextprotocol/sdk/client/index.js');
const { StreamableHTTPClientTransport } = require('@modelcontextprotocol/sdk/client/streamableHttp.js');
const { StdioClientTransport } = require('@modelcontextprotocol/sdk/client/stdio.js');

async function main() {
  const [mode, ...rest] = process.argv.slice(2);
  const calls = JSON.parse(process.env.MCP_CALLS || '[]');
  let transport;
  if (mode === 'http') {
    transport = new StreamableHTTPClientTransport(new URL(rest[0]));
  } else if (mode === 'stdio') {
    transport = new StdioClientTransport({ command: rest[0], args: rest.slice(1), env: process.env, stderr: 'inherit' });
  } else {
    throw new Error(`unknown mode ${mode}: want http or stdio`);
  }
  const client = new Client({ name: 'toolguard-npm-test', version: '1.0.0' });
  await client.connect(transport);
  const out = { server: client.getServerVersion(), calls: [] };
  for (const c of calls) {
    try {
      const r = await client.callTool({ name: c.name, arguments: c.arguments });
      out.calls.push({
        isError: r.isError === true,
        text: (r.content || []).filter((b) => b.type === 'text').map((b) => b.text).join('\n'),
        structuredContent: r.structuredContent === undefined ? null : r.structuredContent,
      });
    } catch (e) {
      out.calls.push({ error: String((e && e.message) || e) });
    }
  }
  await client.close();
  process.stdout.write(JSON.stringify(out) + '\n');
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
