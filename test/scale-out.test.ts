// Several instances on one MongoDB (FerretDB under CI: .ci/run starts it and sets MONGODB_URL): two `npm start`
// processes and one with WORKERS=2, under concurrent load through one key per owner, spread over every
// instance. Credits are never overspent, no acknowledged call is missing from usage, the ledger check holds
// after the load, forced roll-ups on every instance during the load lose nothing, and an instance killed with
// kill -9 mid-load and started again loses nothing and crashes no other. Sessions and OAuth tokens work on
// every instance; a revoked key is refused everywhere within the key cache's 5 s.
import { createHash, randomBytes } from 'node:crypto';
import { createServer } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ServiceProcess, startServiceProcess } from './support/process.ts';
import { MONGODB_URL, dropTestDatabases, mongoTestUrl } from './support/mongo.ts';
import { type DemoUpstream, startDemoUpstream } from './support/upstream.ts';

const OPERATOR_TOKEN = 'op_scale_out_token_0123456789';
const PUBLIC_URL = 'http://tool-server.test';
const KEY_CACHE_MS = 5000;

interface Instance {
  name: string;
  env: Record<string, string>;
  proc: ServiceProcess;
  url: string;
}

describe.runIf(Boolean(MONGODB_URL))('several instances on one MongoDB', () => {
  let databaseUrl = '';
  let upstream: DemoUpstream;
  const instances: Instance[] = [];

  const baseEnv = () => ({
    MONGODB_URL: databaseUrl,
    MASTER_KEY: randomBytesHex,
    OPERATOR_TOKEN,
    PUBLIC_URL,
    TOOL_SPECS_DIR: 'test/fixtures/specs',
    ALLOW_PRIVATE_NETWORKS: 'loopback',
    RATE_LIMIT_BURST: '1000000',
    RATE_LIMIT_PER_MINUTE: '10000000',
    STARTING_CREDITS: '0',
    KEY_CACHE_MS: String(KEY_CACHE_MS),
    // Records roll once 1 s old (60 s by default on MongoDB), so the forced roll-ups below have work to do.
    LEDGER_ROLL_AFTER_SECONDS: '1',
  });
  const randomBytesHex = randomBytes(32).toString('hex');

  async function start(name: string, extra: Record<string, string> = {}): Promise<Instance> {
    const env = { ...baseEnv(), ...extra };
    const proc = startServiceProcess(env);
    return { name, env, proc, url: await proc.url };
  }

  beforeAll(async () => {
    databaseUrl = mongoTestUrl('scale_out').url;
    upstream = await startDemoUpstream();
    upstream.delayMs = 10; // calls are in flight when an instance dies
    instances.push(await start('a'));
    instances.push(await start('b'));
    instances.push(await start('workers', { WORKERS: '2', PORT: String(await freePort()) }));
  }, 60_000);

  afterAll(async () => {
    for (const i of instances) i.proc.child.kill('SIGTERM');
    await Promise.all(instances.map((i) => i.proc.exit));
    await upstream?.close();
    await dropTestDatabases();
  });

  const api = async (base: string, method: string, path: string, token: string, body?: unknown) => {
    const res = await fetch(base + path, {
      method,
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: res.status, body: (await res.json()) as any };
  };
  const mcp = (base: string, serverId: string, token: string, method: string, params: Record<string, unknown> = {}) =>
    fetch(`${base}/mcp/${serverId}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
    });

  /** An owner with credits, an account, a server exposing demo_ping (1 credit) and a server key, made on `base`. */
  async function owner(base: string, credits: number) {
    const created = await api(base, 'POST', '/api/admin/owners', OPERATOR_TOKEN, { email: `o-${randomBytes(4).toString('hex')}@example.com` });
    await api(base, 'POST', `/api/admin/owners/${created.body.id}/credits`, OPERATOR_TOKEN, { amount: credits });
    const token = created.body.token as string;
    const account = await api(base, 'POST', '/api/accounts', token, { kind: 'demo', name: 'd', base_url: upstream.url, token: upstream.token });
    const server = await api(base, 'POST', '/api/servers', token, { name: 's' });
    await api(base, 'POST', `/api/servers/${server.body.id}/tools`, token, { base_tool: 'demo_ping', account_id: account.body.id });
    const key = (await api(base, 'POST', `/api/servers/${server.body.id}/api-keys`, token, { name: 'k' })).body;
    return { id: created.body.id as string, token, serverId: server.body.id as string, key: key.key as string, keyId: key.id as string, credits, succeeded: 0 };
  }

  it('never overspends, loses no acknowledged call and keeps the ledger exact, through forced roll-ups and a kill -9', async () => {
    const owners = [await owner(instances[0].url, 100_000), await owner(instances[1].url, 150), await owner(instances[2].url, 100_000)];
    let running = true;
    let turn = 0;
    const client = async () => {
      while (running) {
        const o = owners[turn % owners.length];
        const target = instances[turn++ % instances.length];
        try {
          const res = await mcp(target.url, o.serverId, o.key, 'tools/call', { name: 'demo_ping', arguments: {} });
          const body = (await res.json()) as { result?: { isError?: boolean } };
          if (res.status === 200 && body.result && !body.result.isError) o.succeeded++;
        } catch {
          // the instance died under this call: the client sees no answer
        }
      }
    };
    const clients = Array.from({ length: 24 }, client);
    const total = () => owners.reduce((s, o) => s + o.succeeded, 0);
    const housekeepEverywhere = () => Promise.all(instances.map((i) => api(i.url, 'POST', '/api/admin/ledger/housekeep', OPERATOR_TOKEN)));

    await expect.poll(total, { timeout: 60_000, interval: 50 }).toBeGreaterThan(150);
    await housekeepEverywhere();
    // kill -9 one instance mid-load; the others keep serving.
    const victim = instances[0];
    victim.proc.child.kill('SIGKILL');
    await victim.proc.exit;
    const before = total();
    await expect.poll(total, { timeout: 60_000, interval: 50 }).toBeGreaterThan(before + 100);
    const restarted = await start('a (restarted)');
    instances[0] = restarted;
    await housekeepEverywhere();
    await expect.poll(total, { timeout: 60_000, interval: 50 }).toBeGreaterThan(before + 250);
    await housekeepEverywhere();
    running = false;
    await Promise.all(clients);

    // No other instance crashed.
    for (const i of instances.slice(1)) expect(i.proc.child.exitCode, `${i.name}: ${i.proc.output()}`).toBeNull();
    // The 1 s roll-up margin of this test is shorter than a write may take with the default timeouts: each instance said so.
    for (const i of instances) expect(i.proc.output()).toContain('LEDGER_ROLL_AFTER_SECONDS is shorter than a record write may take');
    // Everything settled and rolled that can be: the records of the load are over a second old.
    await expect.poll(async () => (await housekeepEverywhere()).some((r) => r.body.ran), { timeout: 30_000 }).toBe(true);

    const check = await api(instances[1].url, 'GET', '/api/admin/ledger/check', OPERATOR_TOKEN);
    expect(check.body.ok, JSON.stringify(check.body)).toBe(true);
    for (const o of owners) {
      const report = check.body.owners.find((r: { owner_id: string }) => r.owner_id === o.id);
      const usage = (await api(instances[2].url, 'GET', '/api/usage', o.token)).body;
      const okCalls = usage.usage.reduce((s: number, r: { calls: number; errors: number }) => s + r.calls - r.errors, 0);
      // Every success a client saw is recorded (a few more may be, their answer lost in the kill) and kept once.
      expect(okCalls).toBeGreaterThanOrEqual(o.succeeded);
      expect(report).toMatchObject({ granted: o.credits, kept: okCalls, difference: 0 });
      // Charges of calls the kill interrupted stay open until settlement reaches them (after any call could last).
      expect(report.balance).toBe(o.credits - okCalls - report.open);
      expect(report.balance).toBeGreaterThanOrEqual(0);
    }
    // The small owner ran out: exactly its credits were spent, never more.
    expect(owners[1].succeeded).toBeLessThanOrEqual(150);
    expect(check.body.owners.find((r: { owner_id: string }) => r.owner_id === owners[1].id).kept).toBeLessThanOrEqual(150);
    const kept = owners.map((o) => check.body.owners.find((r: { owner_id: string }) => r.owner_id === o.id).kept);
    console.log(
      `scale-out: 3 instances (one with WORKERS=2: 4 serving processes), 24 clients, 1 kill -9 and restart, roll-ups forced 3 times on every instance; successes seen per owner ${owners.map((o) => o.succeeded).join('/')}, credits kept ${kept.join('/')}, ledger check ok`,
    );
  }, 240_000);

  it('signs in on one instance and is signed in on all; OAuth tokens from one work on every other', async () => {
    const [a, b, c] = instances;
    // An invited owner sets a password on one instance (a hosted service without e-mail: no open sign-up).
    const invited = await api(a.url, 'POST', '/api/admin/owners', OPERATOR_TOKEN, { email: `s-${randomBytes(4).toString('hex')}@example.com` });
    const accepted = await fetch(`${a.url}/api/auth/invitation`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ token: new URL(invited.body.invite_url).hash.slice(1), password: 'a long passphrase for tests' }),
    });
    expect(accepted.status).toBe(200);
    const cookie = accepted.headers.get('set-cookie')!.split(';')[0];
    for (const i of instances) expect((await fetch(`${i.url}/api/me`, { headers: { cookie } })).status).toBe(200);

    const o = await owner(b.url, 100);
    const redirectUri = 'http://127.0.0.1:9/callback';
    const registered = await fetch(`${a.url}/oauth/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ client_name: 'Scale-out client', redirect_uris: [redirectUri], token_endpoint_auth_method: 'none' }),
    });
    const clientId = ((await registered.json()) as { client_id: string }).client_id;
    const verifier = randomBytes(32).toString('base64url');
    const approved = await api(b.url, 'POST', '/api/oauth/authorize', o.token, {
      response_type: 'code',
      client_id: clientId,
      redirect_uri: redirectUri,
      code_challenge: createHash('sha256').update(verifier).digest('base64url'),
      code_challenge_method: 'S256',
      resource: `${PUBLIC_URL}/mcp/${o.serverId}`,
      state: 'st',
      decision: 'approve',
    });
    const code = new URL(approved.body.redirect_to).searchParams.get('code')!;
    const form = (base: string, fields: Record<string, string>) =>
      fetch(`${base}/oauth/token`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams(fields) });
    const tokens = (await (
      await form(c.url, { grant_type: 'authorization_code', client_id: clientId, code, redirect_uri: redirectUri, code_verifier: verifier })
    ).json()) as { access_token: string; refresh_token: string };
    for (const i of instances) expect((await mcp(i.url, o.serverId, tokens.access_token, 'tools/list')).status).toBe(200);
    const refreshed = (await (await form(a.url, { grant_type: 'refresh_token', client_id: clientId, refresh_token: tokens.refresh_token })).json()) as {
      access_token: string;
    };
    for (const i of instances) expect((await mcp(i.url, o.serverId, refreshed.access_token, 'tools/list')).status).toBe(200);
  }, 60_000);

  it('a key revoked on one instance is refused by every instance within the key cache time', async () => {
    const o = await owner(instances[1].url, 100);
    // Every instance has the key cached as valid.
    for (const i of instances) expect((await mcp(i.url, o.serverId, o.key, 'tools/list')).status).toBe(200);
    const revokedAt = Date.now();
    expect((await api(instances[0].url, 'DELETE', `/api/servers/${o.serverId}/api-keys/${o.keyId}`, o.token)).status).toBe(200);
    // Each instance is asked every 100 ms until it refuses the key: how long after the revocation it did.
    const refusedAfter = await Promise.all(
      instances.map(async (i) => {
        while (Date.now() - revokedAt < 20_000) {
          if ((await mcp(i.url, o.serverId, o.key, 'tools/list')).status === 401) return Date.now() - revokedAt;
          await new Promise((resolve) => setTimeout(resolve, 100));
        }
        return Infinity;
      }),
    );
    // Within the cache time, plus one poll interval and a request's time on a busy machine.
    expect(Math.max(...refusedAfter)).toBeLessThanOrEqual(KEY_CACHE_MS + 1000);
  }, 60_000);
});

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}
