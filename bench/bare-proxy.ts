// A floor for comparison: a bare Koa + got proxy that answers every POST as a tools/call of the upstream,
// with no authentication, limits, credits, validation or protocol handling. What the runtime costs on top
// of the HTTP hop is the distance between this row and ours.
//
// `--durable`: the floor for a service that records every call before it answers. After the upstream's
// answer, one line per call is appended to a file and the answer waits for it; the appends of calls that end
// together share one write (the group commit our ledger uses, runtime/billing/group-commit.ts). The file is
// kept open for appending, as our embedded store keeps its data files (runtime/store/nedb-files.ts): the line
// is with the OS before the answer leaves, so it survives the process being killed (not a power cut: neither
// this nor the embedded store calls fsync).
//
// `--notion`: the floor of the Notion rows. A call reads the page it names (`GET /v1/pages/<page_id>`, as both
// Notion MCP servers do), and tools/list answers BENCH_NOTION_LIST (the `result` of ours's Notion tools/list) as
// fixed bytes: what serving that list over Koa costs with no work at all.
import { mkdtemp, open } from 'node:fs/promises';
import http from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import got from 'got';
import Koa from 'koa';
import { GroupCommit } from '../runtime/billing/group-commit.ts';
import { answerSignals, removeOnStop } from './signals.ts';

const upstream = process.argv[2];
const durable = process.argv.includes('--durable');
const notion = process.argv.includes('--notion');
const notionList = process.env.BENCH_NOTION_LIST;
if (notion && !notionList) throw new Error('--notion needs BENCH_NOTION_LIST, the result of a Notion tools/list');
const NOTION_HEADERS = { authorization: 'Bearer ntn_bench_token_000000000000', 'notion-version': '2025-09-03' };
const client = got.extend({ agent: { http: new http.Agent({ keepAlive: true }) }, responseType: 'json', throwHttpErrors: false });

async function appender(): Promise<(line: string) => Promise<void>> {
  const dir = await mkdtemp(path.join(tmpdir(), 'bench-durable-'));
  removeOnStop(dir); // a few MB a run
  const file = await open(path.join(dir, 'calls.jsonl'), 'a');
  const commit = new GroupCommit<string, void>(async (lines) => void (await file.appendFile(lines.join(''))));
  return (line) => commit.add(line);
}
const record = durable ? await appender() : undefined;

const app = new Koa();
app.use(async (ctx) => {
  const chunks: Buffer[] = [];
  for await (const c of ctx.req) chunks.push(c as Buffer);
  const message = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { id: number; method: string; params?: { arguments?: { page_id?: string } } };
  if (notion && message.method === 'tools/list') {
    ctx.type = 'application/json';
    ctx.body = `{"jsonrpc":"2.0","id":${message.id},"result":${notionList}}`;
    return;
  }
  const started = Date.now();
  const res = await (notion ? client(`${upstream}/v1/pages/${message.params?.arguments?.page_id}`, { headers: NOTION_HEADERS }) : client(`${upstream}/ping`));
  await record?.(`${JSON.stringify({ at: new Date(), id: message.id, status: res.statusCode, latency_ms: Date.now() - started })}\n`);
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
