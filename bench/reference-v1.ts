// The reference of the benchmark: a minimal stateless MCP server on the official SDK v1, as its stateless
// example does it (a new McpServer + StreamableHTTPServerTransport per request), proxying the same upstream.
import http from 'node:http';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { PING_TOOL, pingUpstream } from './upstream-tool.ts';

const upstream = process.argv[2];

function buildServer(): McpServer {
  const server = new McpServer({ name: 'reference-v1', version: '1.0.0' });
  server.registerTool('demo_ping', { ...PING_TOOL, inputSchema: {} }, () => pingUpstream(upstream));
  return server;
}

const httpServer = http.createServer(async (req, res) => {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  const server = buildServer();
  const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
  res.on('close', () => {
    void transport.close();
    void server.close();
  });
  await server.connect(transport);
  await transport.handleRequest(req, res, JSON.parse(Buffer.concat(chunks).toString('utf8')));
});
httpServer.keepAliveTimeout = 65_000;
httpServer.listen(0, '127.0.0.1', () => {
  const { port } = httpServer.address() as import('node:net').AddressInfo;
  console.log(JSON.stringify({ url: `http://127.0.0.1:${port}/mcp` }));
});
