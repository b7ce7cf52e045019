// A floor for comparison: a bare Koa + got proxy that answers every POST as a tools/call of the upstream,
// with no authentication, limits, credits, validation or protocol handling. What the runtime costs on top
// of the HTTP hop is the distance between this row and ours.
import http from 'node:http';
import got from 'got';
import Koa from 'koa';
import { answerSignals } from './signals.ts';

const upstream = process.argv[2];
const client = got.extend({ agent: { http: new http.Agent({ keepAlive: true }) }, responseType: 'json', throwHttpErrors: false });
const app = new Koa();
app.use(async (ctx) => {
  const chunks: Buffer[] = [];
  for await (const c of ctx.req) chunks.push(c as Buffer);
  const message = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { id: number };
  const res = await client(`${upstream}/ping`);
  ctx.body = {
    jsonrpc: '2.0',
    id: message.id,
    result: { content: [{ type: 'text', text: JSON.stringify(res.body) }], structuredContent: res.body, isError: false },
  };
});
const server = app.listen(0, '127.0.0.1', () => {
  const { port } = server.address() as import('node:net').AddressInfo;
  console.log(JSON.stringify({ url: `http://127.0.0.1:${port}/mcp` }));
});
answerSignals();
