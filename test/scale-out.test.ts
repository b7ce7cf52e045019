// Several instances on one MongoDB (FerretDB under CI: .ci/run starts it and sets MONGODB_URL): two `npm start`
// processes and one with WORKERS=2, one of them with its clock 90 s ahead and one 90 s behind (a preload that
// moves Date.now and new Date), under concurrent load through one rate-limited key per owner, spread over every
// instance. Credits are never overspent, usage holds every acknowledged call (and nothing but calls that were
// made), the ledger check holds with nothing unaccounted, forced roll-ups on every instance during the load lose
// nothing, each key's rate limit holds within 10% in every window and refuses no one for longer than a window,
// and an instance killed with kill -9 mid-load and started again loses nothing and crashes no other. An instance
// whose clock is further off than CLOCK_MAX_OFFSET_SECONDS takes no writes (503). Sessions and OAuth tokens work
// on every instance; a revoked key is refused everywhere within the key cache's 5 s.
import { createHash, randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ServiceProcess, freePort, startServiceProcess } from './support/process.ts';
import { MONGODB_URL, dropTestDatabases, mongoTestUrl } from './support/mongo.ts';
import { type DemoUpstream, startDemoUpstream } from './support/upstream.ts';

const OPERATOR_TOKEN = 'op_scale_out_token_0123456789';
const PUBLIC_URL = 'http://tool-server.test';
const KEY_CACHE_MS = 5000;
/** Each key's burst window: 30 calls per 10 s, well below what 8 clients per key ask for even on a busy machine. */
const LIMIT = 30;
const WINDOW_MS = 10_000;
/** A call is judged by the rate limits this soon after it left (on a busy 2-core machine, with margin). */
const JUDGED_WITHIN_MS = 1000;
const SKEW_MS = 90_000;

interface Instance {
  name: string;
  env: Record<string, string>;
  clockSkewMs: number;
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
    RATE_LIMIT_BURST: String(LIMIT),
    RATE_LIMIT_BURST_SECONDS: String(WINDOW_MS / 1000),
    RATE_LIMIT_PER_MINUTE: '10000000',
    STARTING_CREDITS: '0',
    KEY_CACHE_MS: String(KEY_CACHE_MS),
    // Records roll once 1 s old (60 s by default on MongoDB), so the forced roll-ups below have work to do.
    LEDGER_ROLL_AFTER_SECONDS: '1',
  });
  const randomBytesHex = randomBytes(32).toString('hex');

  async function start(name: string, extra: Record<string, string> = {}, clockSkewMs = 0): Promise<Instance> {
    const env = { ...baseEnv(), ...extra };
    const proc = startServiceProcess(env, { clockSkewMs });
    return { name, env, clockSkewMs, proc, url: await proc.url };
  }

  beforeAll(async () => {
    databaseUrl = mongoTestUrl('scale_out').url;
    upstream = await startDemoUpstream();
    upstream.delayMs = 10; // calls are in flight when an instance dies
    instances.push(await start('ahead', {}, SKEW_MS));
    instances.push(await start('on time'));
    instances.push(await start('behind, workers', { WORKERS: '2', PORT: String(await freePort()) }, -SKEW_MS));
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

  it('never overspends, counts every acknowledged call, keeps the ledger exact and the rate limits, with clocks 90 s off, through forced roll-ups and a kill -9', async () => {
    const owners = [await owner(instances[0].url, 100_000), await owner(instances[1].url, 150), await owner(instances[2].url, 100_000)];
    const answers = owners.map(() => ({ admitted: [] as number[], refused: [] as Array<{ at: number; retryAfter: number }>, unanswered: 0 }));
    let running = true;
    let turn = 0;
    const client = async () => {
      while (running) {
        // Every owner through every instance in turn.
        const n = turn++;
        const i = n % owners.length;
        const o = owners[i];
        const target = instances[Math.floor(n / owners.length) % instances.length];
        // When the request left: the limit judges it moments later, before the call runs (its answer may come seconds later).
        const sent = Date.now();
        try {
          const res = await mcp(target.url, o.serverId, o.key, 'tools/call', { name: 'demo_ping', arguments: {} });
          const body = (await res.json()) as { result?: { isError?: boolean } };
          if (res.status === 200) answers[i].admitted.push(sent);
          if (res.status === 429) answers[i].refused.push({ at: sent, retryAfter: Number(res.headers.get('retry-after')) });
          if (res.status === 200 && body.result && !body.result.isError) o.succeeded++;
        } catch (err) {
          // The instance died under this call: the client sees no answer (the call may have been recorded). A
          // connection refused by the dead instance made no call.
          if ((err as { cause?: { code?: string } }).cause?.code !== 'ECONNREFUSED') answers[i].unanswered++;
        }
      }
    };
    const clients = Array.from({ length: 24 }, client);
    const total = () => owners.reduce((s, o) => s + o.succeeded, 0);
    const housekeepEverywhere = () => Promise.all(instances.map((i) => api(i.url, 'POST', '/api/admin/ledger/housekeep', OPERATOR_TOKEN)));

    await expect.poll(total, { timeout: 60_000, interval: 50 }).toBeGreaterThan(100);
    await housekeepEverywhere();
    // kill -9 the instance whose clock is ahead, mid-load; the others keep serving. It comes back as off as it was.
    const victim = instances[0];
    const everyProcess = [...instances];
    victim.proc.child.kill('SIGKILL');
    await victim.proc.exit;
    const killedAt = Date.now();
    const before = total();
    await expect.poll(total, { timeout: 60_000, interval: 50 }).toBeGreaterThan(before + 50);
    const restarted = await start(`${victim.name} (restarted)`, {}, victim.clockSkewMs);
    instances[0] = restarted;
    everyProcess.push(restarted);
    await housekeepEverywhere();
    await expect.poll(total, { timeout: 60_000, interval: 50 }).toBeGreaterThan(before + 60);
    await housekeepEverywhere();
    running = false;
    await Promise.all(clients);
    const stoppedAt = Date.now();

    // No other instance crashed; the skewed ones said how far off their clocks are.
    for (const i of instances.slice(1)) expect(i.proc.child.exitCode, `${i.name}: ${i.proc.output()}`).toBeNull();
    expect(instances[0].proc.output()).toMatch(/clock is 9\d\.\d s ahead of the store's/);
    expect(instances[2].proc.output()).toMatch(/clock is 9\d\.\d s behind the store's/);
    // The 1 s roll-up margin of this test is shorter than a write may take with the default timeouts: each instance said so.
    for (const i of instances) expect(i.proc.output()).toContain('LEDGER_ROLL_AFTER_SECONDS is shorter than a record write may take');
    // Everything settled and rolled that can be: the records of the load are over a second old.
    await expect.poll(async () => (await housekeepEverywhere()).some((r) => r.body.ran), { timeout: 30_000 }).toBe(true);

    const check = await api(instances[1].url, 'GET', '/api/admin/ledger/check', OPERATOR_TOKEN);
    expect(check.body.ok, JSON.stringify(check.body)).toBe(true);
    for (const [n, o] of owners.entries()) {
      const report = check.body.owners.find((r: { owner_id: string }) => r.owner_id === o.id);
      const usage = (await api(instances[2].url, 'GET', '/api/usage', o.token)).body;
      const okCalls = usage.usage.reduce((s: number, r: { calls: number; errors: number }) => s + r.calls - r.errors, 0);
      // Every success a client saw is in usage, kept once; beyond them only calls whose answer the kill lost.
      expect(okCalls).toBeGreaterThanOrEqual(o.succeeded);
      expect(okCalls).toBeLessThanOrEqual(o.succeeded + answers[n].unanswered);
      expect(report).toMatchObject({ granted: o.credits, kept: okCalls, difference: 0, unaccounted: 0 });
      // Charges of calls the kill interrupted stay open until settlement reaches them (after any call could last).
      expect(report.balance).toBe(o.credits - okCalls - report.open);
      expect(report.balance).toBeGreaterThanOrEqual(0);
    }
    // The small owner ran out: exactly its credits were spent, never more.
    expect(owners[1].succeeded).toBeLessThanOrEqual(150);
    expect(check.body.owners.find((r: { owner_id: string }) => r.owner_id === owners[1].id).kept).toBeLessThanOrEqual(150);

    // Rate limits: windows are 10 s slices of the store's time, which is this host's (the peer runs here). Every
    // whole window of the load admits the limit within 10%, never more (the window the kill hit may admit less:
    // the dead instance took its reserved points with it), except windows in which an instance fell back to its
    // own limits because the store did not answer a reservation within a second (each says so in its log, by its
    // own clock); nobody waits longer than a window.
    const fellBack = everyProcess.flatMap((i) =>
      i.proc
        .output()
        .split('\n')
        .filter((line) => line.includes('rate limits: the store did not answer'))
        .map((line) => Math.floor(((JSON.parse(line) as { time: number }).time - i.clockSkewMs) / WINDOW_MS)),
    );
    const perWindow: number[] = [];
    let skipped = 0;
    for (const a of answers) {
      a.admitted.sort((x, y) => x - y);
      const counts = new Map<number, number>();
      for (const t of a.admitted) counts.set(Math.floor(t / WINDOW_MS), (counts.get(Math.floor(t / WINDOW_MS)) ?? 0) + 1);
      const whole = [...counts].filter(([w]) => w * WINDOW_MS > a.admitted[0] && (w + 1) * WINDOW_MS < stoppedAt);
      // A fallback lasts 5 s: it may reach into the next window.
      const judged = whole.filter(([w]) => !fellBack.includes(w) && !fellBack.includes(w - 1));
      skipped += whole.length - judged.length;
      // A call is counted by when it left, and judged moments later: one sent at a window's end may be judged in
      // the next. So the calls sent in a window less its last JUDGED_WITHIN_MS were all judged in it (at most the
      // limit), and those judged in it were all sent in it or in the JUDGED_WITHIN_MS before (at least the limit).
      const sentIn = (from: number, to: number) => a.admitted.filter((t) => t >= from && t < to).length;
      for (const [w, n] of judged) {
        perWindow.push(n);
        expect(sentIn(w * WINDOW_MS, (w + 1) * WINDOW_MS - JUDGED_WITHIN_MS)).toBeLessThanOrEqual(LIMIT * 1.1);
        if (Math.floor(killedAt / WINDOW_MS) !== w) expect(sentIn(w * WINDOW_MS - JUDGED_WITHIN_MS, (w + 1) * WINDOW_MS)).toBeGreaterThanOrEqual(LIMIT * 0.9);
      }
      expect(Math.max(...a.refused.map((r) => r.retryAfter))).toBeLessThanOrEqual(WINDOW_MS / 1000);
      const gaps = a.admitted.slice(1).map((t, i) => t - a.admitted[i]);
      expect(Math.max(...gaps)).toBeLessThan(WINDOW_MS + 2000);
    }
    const kept = owners.map((o) => check.body.owners.find((r: { owner_id: string }) => r.owner_id === o.id).kept);
    console.log(
      `scale-out: 3 instances (clocks +90 s, 0, -90 s; one with WORKERS=2: 4 serving processes), 24 clients, 1 kill -9 and restart, roll-ups forced 3 times on every instance; ` +
        `successes seen per owner ${owners.map((o) => o.succeeded).join('/')}, unanswered ${answers.map((a) => a.unanswered).join('/')}, credits kept ${kept.join('/')}, ledger check ok; ` +
        `admitted per whole 10 s window ${perWindow.join(' ')} (limit ${LIMIT}; ${skipped} windows left out, an instance fell back to its own limits), longest wait between admitted calls ${Math.max(...answers.map((a) => Math.max(...a.admitted.slice(1).map((t, i) => t - a.admitted[i]))))} ms`,
    );
  }, 240_000);

  it('an instance whose clock is further off than CLOCK_MAX_OFFSET_SECONDS takes no writes: 503 with Retry-After, not ready; reads still work', async () => {
    const o = await owner(instances[1].url, 100);
    const skewed = await start('400 s ahead', {}, 400_000);
    try {
      expect(skewed.proc.output()).toMatch(/clock is 400\.\d s ahead of the store's, more than the 300 s allowed \(CLOCK_MAX_OFFSET_SECONDS\)/);
      const ready = await fetch(`${skewed.url}/readyz`);
      expect(ready.status).toBe(503);
      expect(((await ready.json()) as { reason: string }).reason).toContain('takes no writes');
      // The store's one 503, before anything is charged or sent.
      const call = await mcp(skewed.url, o.serverId, o.key, 'tools/call', { name: 'demo_ping', arguments: {} });
      expect(call.status).toBe(503);
      expect(call.headers.get('retry-after')).toBe('60');
      expect(((await call.json()) as { error: { message: string } }).error.message).toMatch(
        /clock is 400\.\d s ahead of the store's, more than the 300 s allowed \(CLOCK_MAX_OFFSET_SECONDS\)/,
      );
      const write = await api(skewed.url, 'POST', '/api/servers', o.token, { name: 'refused' });
      expect(write).toMatchObject({ status: 503, body: { error: 'Service Unavailable' } });
      // Reads are served: tools/list, the owner's servers.
      expect((await mcp(skewed.url, o.serverId, o.key, 'tools/list')).status).toBe(200);
      expect((await api(skewed.url, 'GET', '/api/servers', o.token)).status).toBe(200);
      // Nothing was charged or recorded.
      const usage = (await api(instances[1].url, 'GET', '/api/usage', o.token)).body;
      expect(usage.total_calls).toBe(0);
      expect((await api(instances[1].url, 'GET', '/api/credits', o.token)).body.balance).toBe(100);
    } finally {
      skewed.proc.child.kill('SIGTERM');
      await skewed.proc.exit;
    }
  }, 60_000);

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
