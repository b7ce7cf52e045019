// A second reference: the official SDK v2's stateless handler (createMcpHandler, web-standard Request and
// Response behind a node:http adapter), proxying the same upstream. Measured to decide hand-written vs SDK.
import http from 'node:http';
import { McpServer, createMcpHandler } from '@modelcontextprotocol/server';
import * as z from 'zod/v4';
import { PING_TOOL, pingUpstream } from './upstream-tool.ts';

const upstream = process.argv[2];

const handler = createMcpHandler(() => {
  const server = new McpServer({ name: 'reference-v2', version: '1.0.0' });
  server.registerTool('demo_ping', { ...PING_TOOL, inputSchema: z.object({}) }, () => pingUpstream(upstream));
  return server;
});

const httpServer = http.createServer(async (req, res) => {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  const headers = new Headers();
  for (const [k, v] of Object.entries(req.headers)) if (typeof v === 'string') headers.set(k, v);
  const response = await handler.fetch(
    new Request(`http://127.0.0.1${req.url}`, { method: req.method, headers, body: req.method === 'POST' ? Buffer.concat(chunks) : undefined }),
  );
  res.writeHead(response.status, Object.fromEntries(response.headers));
  res.end(Buffer.from(await response.arrayBuffer()));
});
httpServer.keepAliveTimeout = 65_000;
httpServer.listen(0, '127.0.0.1', () => {
  const { port } = httpServer.address() as import('node:net').AddressInfo;
  console.log(JSON.stringify({ url: `http://127.0.0.1:${port}/mcp` }));
});
