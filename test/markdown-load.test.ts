// One owner cannot stall every tenant with markdown (issue 30, H2). The service runs as its own process, as
// deployed; an attacker's five loops send the worst markdown the tools take (and more) to create_issue and
// create_page, against a provider that answers 503 so that every call is refunded. Another owner's tools/list
// is timed without the attack and during it, in the same run: its p50 and p99 may grow (two cores are
// shared), but not by the seconds a conversion on the event loop took. Then what the tools refuse, and where.
import { mkdtemp } from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ServiceProcess, startServiceProcess } from './support/process.ts';

const OPERATOR_TOKEN = 'operator-token-of-the-markdown-load-test';
const LOOPS = 5;
const SAMPLES = 120;

let svc: ServiceProcess;
let url: string;
let provider: http.Server;
let providerUrl: string;
/** Requests the provider received, by path. */
const received = new Map<string, number>();

/** A provider that has an outage: Jira's and Notion's create endpoints answer 503 after reading the whole body. */
function startOutage(): Promise<void> {
  provider = http.createServer((req, res) => {
    received.set(req.url!, (received.get(req.url!) ?? 0) + 1);
    req.resume();
    req.on('end', () => {
      const json = (status: number, body: unknown) => {
        res.writeHead(status, { 'content-type': 'application/json' });
        res.end(JSON.stringify(body));
      };
      if (req.method === 'GET' && req.url === '/rest/api/3/myself') return json(200, { accountId: '5b10a2844c20165700ede21g', displayName: 'Attacker' });
      if (req.url === '/rest/api/3/issue') return json(503, { errorMessages: ['Service unavailable'], errors: {} });
      if (req.url === '/v1/pages') return json(503, { object: 'error', status: 503, code: 'service_unavailable', message: 'Notion is unavailable.' });
      json(404, { errorMessages: ['Not found'], errors: {} });
    });
  });
  return new Promise((resolve) =>
    provider.listen(0, '127.0.0.1', () => {
      providerUrl = `http://127.0.0.1:${(provider.address() as AddressInfo).port}`;
      resolve();
    }),
  );
}

async function api(method: string, p: string, token: string, body?: unknown): Promise<any> {
  const res = await fetch(url + p, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const json = await res.json();
  if (res.status >= 300) throw new Error(`${method} ${p}: ${res.status} ${JSON.stringify(json)}`);
  return json;
}

/** An owner with credits, accounts on the provider, a server with both create tools, and `keys` server keys. */
async function owner(keys: number) {
  const { id, token } = await api('POST', '/api/admin/owners', OPERATOR_TOKEN, { email: `owner-${Math.random().toString(36).slice(2)}@example.com` });
  await api('POST', `/api/admin/owners/${id}/credits`, OPERATOR_TOKEN, { amount: 100_000 });
  const jira = await api('POST', '/api/accounts', token, {
    kind: 'tracker',
    name: 'Jira',
    site_url: providerUrl,
    email: 'a@example.com',
    api_token: 'token-123',
  });
  const notion = await api('POST', '/api/accounts', token, { kind: 'workspace', name: 'Notion', integration_token: 'ntn_token_123', api_url: providerUrl });
  const server = await api('POST', '/api/servers', token, { name: 'tools' });
  await api('POST', `/api/servers/${server.id}/tools`, token, { base_tool: 'tracker_Create_Issue', account_id: jira.id });
  await api('POST', `/api/servers/${server.id}/tools`, token, { base_tool: 'create_page', account_id: notion.id });
  const made = [];
  for (let i = 0; i < keys; i++) made.push((await api('POST', `/api/servers/${server.id}/api-keys`, token, { name: `key ${i}` })).key as string);
  return { id, token, serverId: server.id as string, keys: made };
}

const rpcBody = (name: string, args: Record<string, unknown>) =>
  JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name, arguments: args } });
const fill = (unit: string, length: number) => unit.repeat(Math.ceil(length / unit.length)).slice(0, length);

/** The attack's requests, built once: the most expensive markdown the finding used, and the most the tools now take. */
const ATTACK = [
  // 800 KB: what the finding sent (an 18.4 MB ADF body, 867 ms on the event loop; 1.55 s as Notion blocks).
  rpcBody('tracker_Create_Issue', { project_key: 'DEMO', summary: 'x', description: fill('- item\n', 800_000) }),
  rpcBody('create_page', { title: 'x', parent_page_id: 'p1', content: fill('- item\n', 800_000) }),
  // Within the limits: Jira's 32,767 characters of the costliest markdown; Notion's 250,000.
  rpcBody('tracker_Create_Issue', { project_key: 'DEMO', summary: 'x', description: fill('- a\n', 32_767) }),
  rpcBody('tracker_Create_Issue', { project_key: 'DEMO', summary: 'x', description: fill('*a* ', 32_767) }),
  rpcBody('create_page', { title: 'x', parent_page_id: 'p1', content: fill('- a\n', 250_000) }),
  // Nesting whose lexing grows with its square.
  rpcBody('tracker_Create_Issue', { project_key: 'DEMO', summary: 'x', description: fill('> ', 32_767) }),
];

const post = (serverId: string, key: string, body: string) =>
  fetch(`${url}/mcp/${serverId}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json', 'mcp-protocol-version': '2025-11-25', authorization: `Bearer ${key}` },
    body,
  });

/** Timings of up to `n` tools/list requests one after the other, in ms; none started after `withinMs`. */
async function listTimes(serverId: string, key: string, n: number, withinMs = 60_000): Promise<number[]> {
  const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' });
  const times: number[] = [];
  const deadline = performance.now() + withinMs;
  for (let i = 0; i < n && performance.now() < deadline; i++) {
    const started = performance.now();
    const res = await post(serverId, key, body);
    expect(res.status).toBe(200);
    await res.text();
    times.push(performance.now() - started);
  }
  return times;
}

const percentile = (times: number[], p: number) => [...times].sort((a, b) => a - b)[Math.min(times.length - 1, Math.floor((times.length * p) / 100))];

beforeAll(async () => {
  await startOutage();
  svc = startServiceProcess({
    DATA_DIR: await mkdtemp(path.join(tmpdir(), 'markdown-load-')),
    OPERATOR_TOKEN,
    ALLOW_PRIVATE_NETWORKS: 'loopback',
    MAX_BODY_BYTES: String(2 * 1024 * 1024),
    SANDBOXES: 'off',
    // No rate limit comes to the rescue: the attack runs flat out, the victim measures as often as it likes.
    RATE_LIMIT_BURST: '1000000',
    RATE_LIMIT_PER_MINUTE: '10000000',
    OWNER_RATE_LIMIT_BURST: '1000000',
    OWNER_RATE_LIMIT_PER_MINUTE: '10000000',
  });
  url = await svc.url;
}, 60_000);

afterAll(async () => {
  svc?.child.kill('SIGTERM');
  await svc?.exit;
  provider?.close();
});

describe('markdown conversion under attack', () => {
  it("keeps another owner's tools/list latency within a small factor of its own without the attack", { timeout: 300_000 }, async () => {
    const [attacker, victim] = await Promise.all([owner(LOOPS), owner(1)]);
    // Warm up both owners' paths (and the conversion threads) before measuring.
    await listTimes(victim.serverId, victim.keys[0], 10);
    await (await post(attacker.serverId, attacker.keys[0], ATTACK[2])).text();

    const quiet = await listTimes(victim.serverId, victim.keys[0], SAMPLES);

    let attacking = true;
    let sent = 0;
    const loops = attacker.keys.map(async (key, loop) => {
      for (let i = loop; attacking; i++) {
        // A service stalled by the attack may be stopped under a request: the loop just ends.
        const res = await post(attacker.serverId, key, ATTACK[i % ATTACK.length]).catch(() => undefined);
        await res?.text();
        sent++;
      }
    });
    // Under way before the clock starts: every loop has had an answer.
    await expect.poll(() => sent, { timeout: 60_000 }).toBeGreaterThanOrEqual(LOOPS);
    const attacked = await listTimes(victim.serverId, victim.keys[0], SAMPLES);
    attacking = false;
    // Not waited for when the service is stalled: afterAll stops it.
    await Promise.race([Promise.all(loops), new Promise((resolve) => setTimeout(resolve, 30_000))]);

    const figures = {
      quiet: { p50: percentile(quiet, 50), p99: percentile(quiet, 99) },
      attacked: { p50: percentile(attacked, 50), p99: percentile(attacked, 99) },
    };
    const ratio = { p50: figures.attacked.p50 / figures.quiet.p50, p99: figures.attacked.p99 / figures.quiet.p99 };
    console.log(
      `another owner's tools/list: without the attack p50 ${figures.quiet.p50.toFixed(1)} ms, p99 ${figures.quiet.p99.toFixed(1)} ms; ` +
        `during it p50 ${figures.attacked.p50.toFixed(1)} ms, p99 ${figures.attacked.p99.toFixed(1)} ms ` +
        `(x${ratio.p50.toFixed(1)}, x${ratio.p99.toFixed(1)}; ${quiet.length} and ${attacked.length} requests); the attacker's requests: ${sent}`,
    );
    // Generous: the attack shares two cores with the victim. A conversion on the event loop held every other
    // request for up to 1.5 s (the finding: p50 4 ms -> 1.5 s).
    expect(ratio.p50).toBeLessThan(6);
    expect(ratio.p99).toBeLessThan(25);
  });
});

describe('what the tools refuse, and where', () => {
  let o: Awaited<ReturnType<typeof owner>>;
  beforeAll(async () => {
    o = await owner(1);
  });

  /** A tools/call's error, the owner's balance change, its record in the call log, and the provider requests it caused. */
  async function attempt(name: string, args: Record<string, unknown>) {
    const before = (await api('GET', '/api/credits', o.token)).balance as number;
    const sent = (received.get('/rest/api/3/issue') ?? 0) + (received.get('/v1/pages') ?? 0);
    const res = await post(o.serverId, o.keys[0], rpcBody(name, args));
    const error = ((await res.json()) as any).result.structuredContent.error as { code: string; message: string };
    const [record] = (await api('GET', '/api/calls?limit=1', o.token)).calls;
    return {
      error,
      charged: before - ((await api('GET', '/api/credits', o.token)).balance as number),
      outcome: record.outcome,
      providerRequests: (received.get('/rest/api/3/issue') ?? 0) + (received.get('/v1/pages') ?? 0) - sent,
    };
  }

  it("refuses markdown longer than the provider takes before the charge (Jira's 32,767 characters; 250,000 for a Notion page)", async () => {
    const jira = await attempt('tracker_Create_Issue', { project_key: 'DEMO', summary: 'x', description: 'x'.repeat(32_768) });
    expect(jira).toMatchObject({ outcome: 'rejected', charged: 0, providerRequests: 0 });
    expect(jira.error).toMatchObject({ code: 'invalid_arguments', message: 'Invalid arguments: "description" must NOT have more than 32767 characters' });
    const notion = await attempt('create_page', { title: 'x', parent_page_id: 'p1', content: 'x'.repeat(250_001) });
    expect(notion).toMatchObject({ outcome: 'rejected', charged: 0, providerRequests: 0 });
    expect(notion.error.message).toBe('Invalid arguments: "content" must NOT have more than 250000 characters');
  });

  it('refuses nesting deeper than 32 levels, and conversions larger than is sent, before anything is sent (refunded)', async () => {
    const nested = await attempt('tracker_Create_Issue', { project_key: 'DEMO', summary: 'x', description: `intro\n\n${'> '.repeat(40)}deep` });
    expect(nested).toMatchObject({ outcome: 'refunded', charged: 0, providerRequests: 0 });
    expect(nested.error).toMatchObject({
      code: 'invalid_arguments',
      message: '"description" is nested more than 32 levels deep (block quotes and lists, line 3)',
    });

    const table = await attempt('tracker_Create_Issue', {
      project_key: 'DEMO',
      summary: 'x',
      description: ('|a|b|c|\n|-|-|-|\n' + fill('|x|y|z|\n', 32_700)).slice(0, 32_767),
    });
    expect(table).toMatchObject({ outcome: 'refunded', charged: 0, providerRequests: 0 });
    expect(table.error.message).toMatch(
      /^"description" converts to [\d,]+ KB of Atlassian Document Format, more than the 1,024 KB sent at most: shorten it or use less formatting$/,
    );

    const blocks = await attempt('create_page', { title: 'x', parent_page_id: 'p1', content: fill('- a\n', 16_000) });
    expect(blocks).toMatchObject({ outcome: 'refunded', charged: 0, providerRequests: 0 });
    expect(blocks.error.message).toBe('"content" makes 4,000 Notion blocks, more than the 1,000 a page is written with at most: shorten it');
  });

  it('converts what fits and sends it; the provider’s 503 gives the credits back', async () => {
    const sent = await attempt('tracker_Create_Issue', { project_key: 'DEMO', summary: 'x', description: '# Plan\n\n- one\n- two\n\n> quoted' });
    expect(sent).toMatchObject({ outcome: 'refunded', charged: 0, providerRequests: 1 });
    expect(sent.error.code).toBe('provider_error');
  });
});
