// `npm start` as a real process: configuration errors named at once, health and readiness, and a graceful
// SIGTERM that lets an in-flight tools/call finish, keeps its usage, and exits 0.
import { cp, mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServiceProcess as start } from './support/process.ts';
import { type DemoUpstream, startDemoUpstream } from './support/upstream.ts';

const OPERATOR_TOKEN = 'op_test_token_0123456789abcdef';

describe('configuration', () => {
  it('refuses to start and names every bad variable', async () => {
    const p = start({
      PORT: 'eighty',
      LOG_LEVEL: 'loud',
      MASTER_KEY: 'short',
      ALLOW_PRIVATE_NETWORKS: '10.0.0.0/99',
      OTEL_EXPORTER_OTLP_ENDPOINT: 'collector:4318',
    });
    p.url.catch(() => undefined);
    expect(await p.exit).toBe(1);
    const out = p.output();
    expect(out).toContain('Invalid configuration:');
    for (const name of [
      'PORT must be an integer',
      'LOG_LEVEL must be one of',
      'MASTER_KEY must be 32 bytes',
      'ALLOW_PRIVATE_NETWORKS:',
      'OTEL_EXPORTER_OTLP_ENDPOINT must be',
    ])
      expect(out).toContain(name);
  });

  it('refuses WORKERS > 1 on the embedded store, saying what it needs', async () => {
    const p = start({ WORKERS: '2', DATA_DIR: await mkdtemp(path.join(tmpdir(), 'ops-')) });
    p.url.catch(() => undefined);
    expect(await p.exit).toBe(1);
    expect(p.output()).toContain('WORKERS > 1 needs MONGODB_URL: the embedded store belongs to a single process');
  });

  it('refuses to start on a bad spec set, with file, line and column', async () => {
    const specs = await mkdtemp(path.join(tmpdir(), 'ops-specs-'));
    await cp(path.resolve('test/fixtures/specs'), specs, { recursive: true });
    await writeFile(path.join(specs, 'demo/ping.yaml'), (await readFile(path.join(specs, 'demo/ping.yaml'), 'utf8')).replace('credits: 1', 'credits: free'));
    const p = start({ TOOL_SPECS_DIR: specs, DATA_DIR: await mkdtemp(path.join(tmpdir(), 'ops-')) });
    p.url.catch(() => undefined);
    expect(await p.exit).toBe(1);
    expect(p.output()).toContain('1 problem(s) in the tool specs:');
    expect(p.output()).toMatch(/demo\/ping\.yaml:5:10 \/credits must be integer/);
  });
});

describe('a running service', () => {
  let upstream: DemoUpstream;
  let proc: ReturnType<typeof start>;
  let base: string;

  beforeAll(async () => {
    upstream = await startDemoUpstream();
    proc = start({
      DATA_DIR: await mkdtemp(path.join(tmpdir(), 'ops-')),
      TOOL_SPECS_DIR: path.resolve('test/fixtures/specs'),
      OPERATOR_TOKEN,
      ALLOW_PRIVATE_NETWORKS: 'loopback',
    });
    base = await proc.url;
  });

  afterAll(async () => {
    proc?.child.kill('SIGKILL');
    await upstream?.close();
  });

  const call = async (method: string, p: string, token: string, body?: unknown) => {
    const res = await fetch(base + p, {
      method,
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: res.status, body: (await res.json()) as any };
  };

  it('answers health and readiness', async () => {
    expect((await fetch(`${base}/healthz`)).status).toBe(200);
    expect(await (await fetch(`${base}/readyz`)).json()).toEqual({ status: 'ready', store: 'embedded', tools: 3 });
  });

  it('finishes an in-flight call on SIGTERM, then exits 0', async () => {
    const owner = (await call('POST', '/api/admin/owners', OPERATOR_TOKEN, { email: 'ops@example.com' })).body;
    await call('POST', `/api/admin/owners/${owner.id}/credits`, OPERATOR_TOKEN, { amount: 10 });
    const account = (await call('POST', '/api/accounts', owner.token, { kind: 'demo', name: 'd', base_url: upstream.url, token: upstream.token })).body;
    const server = (await call('POST', '/api/servers', owner.token, { name: 's' })).body;
    await call('POST', `/api/servers/${server.id}/tools`, owner.token, { base_tool: 'demo_echo', account_id: account.id });
    const key = (await call('POST', `/api/servers/${server.id}/api-keys`, owner.token, { name: 'k' })).body.key;

    upstream.delayMs = 700;
    const seen = upstream.requests.length;
    const inflight = fetch(`${base}/mcp/${server.id}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'demo_echo', arguments: { message: 'last words' } } }),
    });
    // The call is in flight once the upstream has it (it answers 700 ms later).
    await expect.poll(() => upstream.requests.length, { timeout: 10_000 }).toBeGreaterThan(seen);
    proc.child.kill('SIGTERM');
    const answer = (await (await inflight).json()) as { result: { content: Array<{ text: string }> } };
    upstream.delayMs = 0;
    expect(JSON.parse(answer.result.content[0].text)).toEqual({ echo: 'last words', channel: null });
    expect(await proc.exit).toBe(0);
  });
});

describe('the access log of a process', () => {
  it('writes every request as a whole line: a burst in 4 KB writes, a lone request within moments, the rest at SIGTERM', async () => {
    const proc = start({ DATA_DIR: await mkdtemp(path.join(tmpdir(), 'ops-')), OPERATOR_TOKEN, LOG_LEVEL: 'info' });
    const base = await proc.url;
    const lines = () =>
      proc
        .output()
        .split('\n')
        .filter((line) => line.startsWith('{'))
        .map((line) => JSON.parse(line) as { msg: string; path?: string; status?: number });
    const requests = (p: string) => lines().filter((line) => line.msg === 'request' && line.path === p);

    await Promise.all(Array.from({ length: 300 }, () => fetch(`${base}/healthz`).then((res) => res.arrayBuffer())));
    await expect.poll(() => requests('/healthz').length, { timeout: 20_000 }).toBe(300);
    // One request and no more traffic: its line is not held back waiting for 4 KB.
    await fetch(`${base}/readyz`).then((res) => res.arrayBuffer());
    await expect.poll(() => requests('/readyz').length, { timeout: 20_000 }).toBe(1);

    await Promise.all(Array.from({ length: 5 }, () => fetch(`${base}/api/usage`).then((res) => res.arrayBuffer())));
    proc.child.kill('SIGTERM');
    expect(await proc.exit).toBe(0);
    expect(requests('/api/usage').map((line) => line.status)).toEqual([401, 401, 401, 401, 401]);
  });
});
