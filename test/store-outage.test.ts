// A MongoDB store that stops answering under calls: its server paused (SIGSTOP: connections stay open, nothing
// answers), then killed (nothing listens) and started again. A FerretDB of this suite's own (the shared peer of
// MONGODB_URL serves the other suites meanwhile). Every call must answer within the deadline, 503 with
// Retry-After, saying whether it reached the provider; /readyz within a second; nothing hangs; afterwards calls
// work again, no acknowledged call is missing from the ledger, and the ledger check is exact.
import type { ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it, onTestFinished } from 'vitest';
import { ensureBinary, launchPeer } from './peers/mongo/ferretdb.ts';
import { watchLoopLag } from './support/loop-lag.ts';
import { MONGODB_URL } from './support/mongo.ts';
import { type TestService, createOwner, createServer, startTestService } from './support/service.ts';
import { DEMO_SPECS, demoAccounts, startDemoUpstream, type DemoUpstream } from './support/upstream.ts';

const DEADLINE_MS = 1500;
/** What a call may add to the deadline of the one operation that failed (those before it answered). */
const SLACK_MS = 1000;
const CLIENTS = 6;

let peer: ChildProcess | undefined;
let dataDir: string | undefined;
let svc: TestService | undefined;
let upstream: DemoUpstream | undefined;
afterAll(async () => {
  try {
    peer?.kill('SIGCONT');
    await svc?.close().catch(() => undefined); // a test that failed may leave no store to flush to
  } finally {
    peer?.kill('SIGKILL'); // never left running: it is no detached peer of the checkout
    await upstream?.close();
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  }
});

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

interface Answer {
  at: number;
  ms: number;
  status: number;
  ok: boolean;
  retryAfter: string | null;
  providerReached?: boolean;
  message?: string;
}

describe.runIf(MONGODB_URL)('a MongoDB store that stops answering, then goes away', () => {
  it('answers 503 within the deadline, /readyz within a second, and loses nothing acknowledged', async () => {
    dataDir = await mkdtemp(path.join(tmpdir(), 'store-outage-'));
    const binary = await ensureBinary();
    let launched = await launchPeer(binary, dataDir);
    peer = launched.child;
    const listen = new URL(launched.base).host;
    upstream = await startDemoUpstream();
    upstream.delayMs = 100; // calls are at the provider when the store stops
    svc = await startTestService({
      ...DEMO_SPECS,
      MONGODB_URL: new URL('outage', launched.base).toString(),
      MASTER_KEY: 'cd'.repeat(32),
      MONGODB_DEADLINE_MS: String(DEADLINE_MS),
      RATE_LIMIT_BURST: '1000000',
      RATE_LIMIT_PER_MINUTE: '10000000',
      KEY_CACHE_MS: '1000',
    });
    const service = svc;
    const owner = await createOwner(service, 100_000);
    const { serverId, key } = await createServer(service, owner, { accounts: demoAccounts(upstream), tools: [{ base_tool: 'demo_ping', account: 'demo' }] });
    // A dashboard session, for a page while the store is paused.
    const signedUp = await fetch(`${service.url}/api/auth/signup`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', origin: service.url },
      body: JSON.stringify({ email: 'pages@example.com', password: 'a long enough passphrase 1' }),
    });
    expect(signedUp.status).toBe(201);
    const cookie = signedUp.headers
      .getSetCookie()
      .map((c) => c.split(';')[0])
      .join('; ');

    const lag = watchLoopLag(); // this process runs the service too
    onTestFinished(() => lag.stop());
    const answers: Answer[] = [];
    const readiness: Array<{ at: number; status: number; ms: number }> = [];
    let running = true;
    const call = async () => {
      const started = Date.now();
      const res = await fetch(`${service.url}/mcp/${serverId}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'demo_ping', arguments: {} } }),
      });
      const body = (await res.json()) as { result?: { isError?: boolean }; error?: { message: string; data?: { provider_reached?: boolean } } };
      answers.push({
        at: started,
        ms: Date.now() - started,
        status: res.status,
        ok: res.status === 200 && body.result?.isError === false,
        retryAfter: res.headers.get('retry-after'),
        providerReached: body.error?.data?.provider_reached,
        message: body.error?.message,
      });
    };
    const clients = Array.from({ length: CLIENTS }, async () => {
      while (running) await call();
    });
    onTestFinished(() => {
      running = false;
    });
    const watcher = (async () => {
      while (running) {
        const started = Date.now();
        const res = await fetch(`${service.url}/readyz`);
        readiness.push({ at: started, status: res.status, ms: Date.now() - started });
        await sleep(100);
      }
    })();
    const answeredSince = (since: number, ok: boolean) => answers.filter((a) => a.at >= since && a.ok === ok).length;
    const until = async (condition: () => boolean, what: string) => {
      const deadline = Date.now() + 60_000;
      while (!condition()) {
        if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; the last answers: ${JSON.stringify(answers.slice(-3))}`);
        await sleep(50);
      }
    };

    await until(() => answeredSince(0, true) >= 50, 'calls before the outage');
    const paused = Date.now();
    peer.kill('SIGSTOP');
    await until(() => answeredSince(paused + DEADLINE_MS, false) >= 30, 'calls refused while the store is paused');
    await sleep(1200); // a second of /readyz after the first refusals
    const page = await fetch(`${service.url}/`, { headers: { cookie, accept: 'text/html' } });
    const pageText = await page.text();
    const loggedWhilePaused = service.logs.filter((line) => line.includes('the store cannot take writes')).length;
    const resumed = Date.now();
    peer.kill('SIGCONT');
    await until(() => answeredSince(resumed + DEADLINE_MS, true) >= 30, 'calls after the store answers again');

    const killed = Date.now();
    const gone = once(peer, 'exit');
    peer.kill('SIGKILL');
    await until(() => answeredSince(killed + 500, false) >= 30, 'calls refused while the store is down');
    await gone; // its files and port are free
    const restarted = Date.now();
    launched = await launchPeer(binary, dataDir, { listen });
    peer = launched.child;
    await until(() => answeredSince(restarted + DEADLINE_MS, true) >= 30, 'calls after the store is back');
    running = false;
    await Promise.all([...clients, watcher]);

    // Every answer within the deadline; every refusal a 503 with Retry-After saying whether the provider was reached.
    const refused = answers.filter((a) => !a.ok);
    const acknowledged = answers.filter((a) => a.ok).length;
    const reached = refused.filter((a) => a.providerReached === true).length;
    console.log(
      `store outage: ${answers.length} calls, ${acknowledged} acknowledged, ${refused.length} answered 503 (${reached} after the provider), ` +
        `slowest answer ${Math.max(...answers.map((a) => a.ms))} ms (deadline ${DEADLINE_MS} ms), slowest /readyz ${Math.max(...readiness.map((r) => r.ms))} ms, ` +
        `event loop late by ${Math.round(lag.worstMs())} ms at worst`,
    );
    expect(Math.max(...answers.map((a) => a.ms))).toBeLessThan(DEADLINE_MS + SLACK_MS + lag.worstMs());
    for (const a of refused) expect(a).toMatchObject({ status: 503, retryAfter: '5' });
    expect(reached).toBeGreaterThan(0);

    // /readyz: always within a second; not ready while the store was paused or down, ready once it was back.
    expect(Math.max(...readiness.map((r) => r.ms))).toBeLessThan(1000 + lag.worstMs());
    const during = (from: number, to: number) => readiness.filter((r) => r.at >= from && r.at + r.ms < to);
    expect(during(paused + 1000, resumed).length).toBeGreaterThan(5);
    expect(during(paused + 1000, resumed).every((r) => r.status === 503)).toBe(true);
    expect(during(killed + 1000, restarted).every((r) => r.status === 503)).toBe(true);
    expect(readiness.at(-1)!.status).toBe(200);
    expect(loggedWhilePaused).toBe(1);
    // A page says it in a page.
    expect(page.status).toBe(503);
    expect(page.headers.get('retry-after')).toBe('5');
    expect(page.headers.get('content-type')).toMatch(/^text\/html/);
    expect(pageText).toContain('The service cannot answer right now');
    expect(pageText).toMatch(/The service cannot take this request now: (the store did not answer within 1500 ms|no usable store server within 1500 ms)\./);
    expect(service.logs.some((line) => line.includes('the store takes writes again'))).toBe(true);

    // The ledger: every acknowledged call recorded; a call refused after its provider answered is recorded at
    // most once, kept if its late record reached the store, else refunded; the check exact.
    await service.flush();
    const calls = (await service.call('GET', '/api/calls?format=json', { token: owner.token })).body.calls as Array<{ outcome: string; code: string }>;
    const kept = calls.filter((c) => c.outcome === 'ok').length;
    expect(kept).toBeGreaterThanOrEqual(acknowledged);
    expect(kept).toBeLessThanOrEqual(acknowledged + reached);
    expect(upstream.requests.length).toBe(acknowledged + reached);
    const check = (await service.call('GET', '/api/admin/ledger/check', { token: service.operatorToken })).body;
    expect(check.ok, JSON.stringify(check)).toBe(true);
    expect(check.owners[0]).toMatchObject({ kept, difference: 0, unaccounted: 0 });
  }, 240_000);
});
