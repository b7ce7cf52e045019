// This service for the benchmark: in-memory store (BENCH_STORE=file: the file-backed store `npm start` uses), the demo provider of test/fixtures/specs pointed at the
// fake upstream, one server with demo_ping, a key, plenty of credits, limits out of the way. Logs are kept
// at info and written to /dev/null, so their cost is measured. BENCH_FAMILY=workspace instead serves the real
// Notion tools (tool-specs/workspace, all 13 on one server) with a Notion account on the fake upstream, to
// compare with the official Notion MCP server doing the same calls.
//
// On MongoDB (BENCH_STORE=mongodb), BENCH_MONGODB_DB and BENCH_MASTER_KEY name the database and its master key,
// so that several processes can serve one owner as instances of one service do: the first sets the owner up,
// the others are started with BENCH_JOIN=<the first's JSON line> and serve the same server with the same key.
import { AsyncLocalStorage } from 'node:async_hooks';
import { randomBytes } from 'node:crypto';
import { mkdtemp } from 'node:fs/promises';
import { createServer, Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { MongoClient } from 'mongodb';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { loadConfig } from '../runtime/config.ts';
import { startService } from '../runtime/service.ts';
import { answerSignals, removeOnStop } from './signals.ts';

const upstream = process.argv[2];
const notion = process.env.BENCH_FAMILY === 'workspace';
const mongodbUrl = process.env.BENCH_STORE === 'mongodb' ? process.env.BENCH_MONGODB_URL : undefined;
const joined = process.env.BENCH_JOIN ? (JSON.parse(process.env.BENCH_JOIN) as Record<string, string>) : undefined;
const inRequest = mongodbUrl ? answerInRequestContext() : undefined;
// The bench's own data folder (the file store's calls reach tens of MB a run): gone when the runner stops the server.
const dataDir = await mkdtemp(path.join(tmpdir(), 'tool-server-bench-'));
removeOnStop(dataDir);
const config = loadConfig({
  PORT: '0',
  LOG_LEVEL: process.env.BENCH_LOG_LEVEL || 'info',
  ALLOW_PRIVATE_NETWORKS: 'loopback',
  TOOL_SPECS_DIR: path.resolve(notion ? 'tool-specs' : 'test/fixtures/specs'),
  RATE_LIMIT_BURST: '1000000',
  RATE_LIMIT_PER_MINUTE: '10000000',
  DATA_DIR: dataDir,
  ...(mongodbUrl
    ? {
        MONGODB_URL: withDatabase(mongodbUrl, process.env.BENCH_MONGODB_DB || `bench_${process.pid}`),
        MASTER_KEY: process.env.BENCH_MASTER_KEY || randomBytes(32).toString('hex'),
      }
    : {}),
});
config.inMemory = !mongodbUrl && process.env.BENCH_STORE !== 'file';
const service = await startService({ config, logDestination: '/dev/null' });
const setUp = joined ?? (await setUpOwner());
const commands = mongodbUrl ? await countCommands(service.store.mongo!.client as MongoClient, inRequest!, setUp.owner) : undefined;
console.log(
  JSON.stringify({ ...setUp, url: `${service.url}/mcp/${setUp.server}`, metrics: `${service.url}/metrics`, operator: service.operatorToken, commands }),
);

/** An owner with plenty of credits, an account on the upstream, a server with the tools, and its key. */
async function setUpOwner(): Promise<Record<string, string>> {
  const api = async (p: string, token: string, body?: unknown) => {
    const res = await fetch(service.url + p, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify(body ?? {}),
    });
    return (await res.json()) as Record<string, any>;
  };
  const owner = await api('/api/admin/owners', service.operatorToken, { email: 'bench@example.com' });
  await api(`/api/admin/owners/${owner.id}/credits`, service.operatorToken, { amount: 1_000_000_000 });
  const account = notion
    ? await api('/api/accounts', owner.token, { kind: 'workspace', name: 'bench', integration_token: 'ntn_bench_token_000000000000', api_url: upstream })
    : await api('/api/accounts', owner.token, { kind: 'demo', name: 'bench', base_url: upstream, token: 'tok_bench_token_0000' });
  const server = await api('/api/servers', owner.token, { name: 'bench', id: 'bench' });
  const tools = notion ? [...service.catalog.current.tools.values()].filter((t) => t.spec.provider === 'workspace').map((t) => t.spec.id) : ['demo_ping'];
  for (const base_tool of tools) await api(`/api/servers/${server.id}/tools`, owner.token, { base_tool, account_id: account.id });
  const key = await api(`/api/servers/${server.id}/api-keys`, owner.token, { name: 'bench' });
  return { owner: owner.id, server: server.id, key: key.key };
}

/** The same server, another database. */
function withDatabase(url: string, db: string): string {
  const u = new URL(url);
  u.pathname = `/${db}`;
  u.searchParams.set('monitorCommands', 'true');
  return u.toString();
}

/**
 * Every request this process's HTTP servers answer runs in a context of its own, so that a MongoDB command can
 * be told apart: sent while answering a request (on a call's path: the answer may wait for it) or otherwise
 * (timers: the last-used flush, the roll-up, settlement, lease renewals, the credit blocks' tick, even one set
 * while answering an earlier request: in the background). Only the MongoDB row does
 * this: the promise hooks it turns on slow its process, whose rates count for nothing (its command counts do).
 */
function answerInRequestContext(): AsyncLocalStorage<Answering> {
  const context = new AsyncLocalStorage<Answering>();
  const emit = Server.prototype.emit as (this: Server, event: string, ...args: unknown[]) => boolean;
  Server.prototype.emit = function (this: Server, event: string, ...args: unknown[]) {
    if (event !== 'request') return emit.call(this, event, ...args);
    // A timer set while answering keeps the request's context: what it sends after the answer is background.
    const answering = { now: true };
    const done = () => (answering.now = false);
    (args[1] as ServerResponse).once('finish', done).once('close', done);
    return context.run(answering, () => emit.call(this, event, ...args));
  };
  return context;
}

/** Whether the request a context belongs to is still being answered. */
interface Answering {
  now: boolean;
}

/**
 * Counts the commands the service sends to MongoDB (the driver's command monitoring) and serves the counts on a
 * loopback port of its own, for the runner to read around each measure: all commands, the writes among them,
 * those sent while answering a request, and the owner's line: the writes to the owner's credit document
 * (`credits`, _id the owner; every statement of an update command counts, as each writes the document).
 */
async function countCommands(client: MongoClient, inRequest: AsyncLocalStorage<Answering>, ownerId: string): Promise<string> {
  const WRITES = new Set(['insert', 'update', 'delete', 'findAndModify']);
  const counts = { commands: 0, writes: 0, onPath: 0, ownerLine: 0 };
  /** Each kind of command (name, collection, the fields it filters or sets on) and how often it was sent, on the path or not. */
  const kinds = new Map<string, { onPath: number; background: number }>();
  client.on('commandStarted', (e) => {
    counts.commands++;
    if (WRITES.has(e.commandName)) counts.writes++;
    const onPath = inRequest.getStore()?.now === true;
    if (onPath) counts.onPath++;
    const kind = commandKind(e.commandName, e.command);
    const seen = kinds.get(kind) ?? { onPath: 0, background: 0 };
    seen[onPath ? 'onPath' : 'background']++;
    kinds.set(kind, seen);
    const { command } = e;
    if (command.findAndModify === 'credits' && command.query?._id === ownerId) counts.ownerLine++;
    if (command.update === 'credits') counts.ownerLine += (command.updates as Array<{ q: { _id?: unknown } }>).filter((u) => u.q._id === ownerId).length;
  });
  const counter = createServer((req, res) => res.end(JSON.stringify(req.url === '/kinds' ? Object.fromEntries(kinds) : counts)));
  await new Promise<void>((resolve) => counter.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(counter.address() as AddressInfo).port}/`;
}

/** A command's kind: its name, collection and the shape (field names, not values) of what it filters or sets. */
function commandKind(name: string, command: Record<string, any>): string {
  const shape = (o: unknown): string =>
    o && typeof o === 'object' && !Array.isArray(o)
      ? `{${Object.entries(o)
          .map(([k, v]) => (k.startsWith('$') ? `${k}:${shape(v)}` : k))
          .join(',')}}`
      : '';
  const collection = command[name];
  if (name === 'update' || name === 'delete')
    return `${name} ${collection} ${(command[name === 'update' ? 'updates' : 'deletes'] as Array<Record<string, unknown>>).map((u) => `${shape(u.q)} ${shape(u.u)}`).join(' | ')}`;
  if (name === 'insert') return `insert ${collection} x${(command.documents as unknown[]).length}`;
  if (name === 'findAndModify') return `findAndModify ${collection} ${shape(command.query)} ${shape(command.update)}`;
  if (name === 'find') return `find ${collection} ${shape(command.filter)}`;
  if (name === 'aggregate') return `aggregate ${collection} ${(command.pipeline as Array<Record<string, unknown>>).map(shape).join(' ')}`;
  return `${name} ${typeof collection === 'string' ? collection : ''}`;
}
answerSignals();
