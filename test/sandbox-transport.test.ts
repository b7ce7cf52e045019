// The service's own sandboxes as the outbound client reaches them (runtime/sandbox/sandboxes.ts), with a small
// fixture sandbox: only requests that carry an owner reach that owner's set, over a unix socket in a private
// folder; redirects never leave the sandbox; sets are bounded, stop when idle and start again from the seed.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, statSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listen, sendJson } from '../sandboxes/harness.ts';
import type { SandboxDefinition } from '../sandboxes/in-service.ts';
import { createHttpClient, type UpstreamRequest } from '../runtime/http/client.ts';
import { guardedLookup, parseAllowList } from '../runtime/http/guard.ts';
import { Sandboxes } from '../runtime/sandbox/sandboxes.ts';
import { ToolError } from '../runtime/tool-error.ts';

const ECHO = 'echo.sandbox.invalid';
const OTHER = 'other.sandbox.invalid';
const IDLE_MS = 60_000;

describe('the sandbox transport', () => {
  let loopback: http.Server;
  let loopbackHits = 0;
  let loopbackUrl: string;
  let sandboxes: Sandboxes;
  const socketPaths: string[] = [];
  const slow: Array<() => void> = [];

  // Counts requests per start (the seed is 0) and says whose secret it was started with.
  const fixture: SandboxDefinition = {
    kind: 'fixture',
    name: 'Sandbox fixture',
    hosts: [ECHO, OTHER],
    account: (secret) => ({ token: secret('token') }),
    example: { tool: 'none', arguments: {} },
    async start({ sockets, secret }) {
      socketPaths.push(...Object.values(sockets).map((s) => s.path));
      let count = 0;
      const servers = await Promise.all(
        [ECHO, OTHER].map((host) =>
          listen(
            (req, res) => {
              const at = new URL(req.url ?? '/', 'http://x').pathname;
              const redirect = (location: string) => void res.writeHead(302, { location }).end();
              if (at === '/redirect-out') return redirect(`${loopbackUrl}/stolen`);
              if (at === '/redirect-other') return redirect(`https://${OTHER}/hello`);
              if (at === '/redirect-self') return redirect('/hello');
              if (at === '/slow') return void slow.push(() => sendJson(res, 200, { slow: true }));
              sendJson(res, 200, { host, token: secret('token'), count: ++count });
            },
            { socket: sockets[host] },
          ),
        ),
      );
      return { close: async () => void (await Promise.all(servers.map((s) => s.close()))) };
    },
  };

  beforeAll(async () => {
    loopback = http.createServer((_req, res) => {
      loopbackHits++;
      res.end('{}');
    });
    await new Promise<void>((r) => loopback.listen(0, '127.0.0.1', r));
    loopbackUrl = `http://127.0.0.1:${(loopback.address() as AddressInfo).port}`;
    sandboxes = new Sandboxes({ secret: Buffer.alloc(32, 7), idleMs: IDLE_MS, maxSets: 2, logger: pino({ level: 'silent' }), definitions: [fixture] });
  });
  afterAll(async () => {
    loopback.close();
    await sandboxes.close();
  });

  // The guard allows loopback here, so only the sandbox rule can refuse the redirect to it.
  const client = () =>
    createHttpClient({ timeoutMs: 5000, maxResponseBytes: 10_000, allow: parseAllowList('loopback'), retries: 0, maxRetryAfterMs: 0, sandboxes });
  const get = (url: string, extra: Partial<UpstreamRequest> = {}) => client().send({ method: 'GET', url: new URL(url), headers: {}, ...extra });
  const failure = async (promise: Promise<unknown>) => {
    const err = await promise.then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(ToolError);
    return (err as ToolError).toJSON();
  };

  it("reaches the owner's own set over a socket in a private folder, http or https, and nothing else does", async () => {
    const a = await get(`https://${ECHO}/hello`, { sandboxOwner: 'own_a' });
    expect(a).toMatchObject({ status: 200, body: { host: ECHO, count: 1 } });
    expect((await get(`http://${ECHO}/hello`, { sandboxOwner: 'own_a' })).body).toMatchObject({ count: 2 });
    const b = await get(`https://${ECHO}/hello`, { sandboxOwner: 'own_b' });
    // Owner B has a set of its own: its own count, its own credentials.
    expect(b.body).toMatchObject({ count: 1 });
    expect((b.body as { token: string }).token).not.toBe((a.body as { token: string }).token);
    expect(sandboxes.stats()).toEqual({ sets: 2, sandboxes: 2 });

    const folder = path.dirname(socketPaths[0]);
    expect(statSync(folder).mode & 0o777).toBe(0o700);
    expect(socketPaths.every((p) => path.dirname(p) === folder)).toBe(true);

    // Without an owner (a normal account, a webhook URL) the name fails like any name that does not resolve.
    const unknown = await failure(get('https://nowhere.example.invalid/hello'));
    expect(unknown).toMatchObject({ code: 'network_error', message: 'Could not reach the provider at nowhere.example.invalid (ENOTFOUND)' });
    expect(await failure(get(`https://${ECHO}/hello`))).toEqual({ ...unknown, message: `Could not reach the provider at ${ECHO} (ENOTFOUND)` });
    // A sandbox name nothing answers, even for an owner: the same.
    expect(await failure(get('https://nope.sandbox.invalid/', { sandboxOwner: 'own_a' }))).toEqual({
      ...unknown,
      message: 'Could not reach the provider at nope.sandbox.invalid (ENOTFOUND)',
    });
  });

  it('sends no name under .invalid to a resolver (RFC 6761)', async () => {
    const asked: string[] = [];
    const lookup = guardedLookup(parseAllowList(''), ((
      hostname: string,
      _options: unknown,
      callback: (err: Error | null, address: string, family: number) => void,
    ) => {
      asked.push(hostname);
      callback(null, '93.184.215.14', 4);
    }) as never);
    const answer = (hostname: string) =>
      new Promise<{ err: NodeJS.ErrnoException | null; address: unknown }>((resolve) => lookup(hostname, {}, (err, address) => resolve({ err, address })));
    for (const name of [ECHO, 'jira.sandbox.invalid.', 'INVALID', 'x.Invalid']) {
      expect((await answer(name)).err).toMatchObject({ code: 'ENOTFOUND', message: `getaddrinfo ENOTFOUND ${name}` });
    }
    expect(asked).toEqual([]);
    expect((await answer('example.com')).address).toBe('93.184.215.14');
    expect(asked).toEqual(['example.com']);
  });

  it('refuses every redirect out of the sandbox, and follows one within it', async () => {
    const out = await failure(get(`https://${ECHO}/redirect-out`, { sandboxOwner: 'own_a' }));
    expect(out).toMatchObject({ code: 'outbound_refused', message: expect.stringContaining(`a redirect from the sandbox at ${ECHO} may not leave it`) });
    expect(loopbackHits).toBe(0);
    expect(await failure(get(`https://${ECHO}/redirect-other`, { sandboxOwner: 'own_a' }))).toMatchObject({ code: 'outbound_refused' });
    expect(await get(`https://${ECHO}/redirect-self`, { sandboxOwner: 'own_a' })).toMatchObject({ status: 200, body: { host: ECHO } });
  });

  it('bounds the sets, keeps a set in use, and starts a stopped one again from its seed', async () => {
    expect(sandboxes.stats().sets).toBe(2);
    const third = await failure(get(`https://${ECHO}/hello`, { sandboxOwner: 'own_c' }));
    expect(third).toMatchObject({
      code: 'sandbox_unavailable',
      retryable: true,
      message: expect.stringContaining('All 2 sandbox sets of this service are in use'),
    });

    // A request in flight keeps its set past the idle time; the other set stops.
    const pending = get(`https://${ECHO}/slow`, { sandboxOwner: 'own_a' });
    await expect.poll(() => slow.length).toBe(1);
    await sandboxes.sweep(Date.now() + IDLE_MS);
    expect(sandboxes.stats().sets).toBe(1);
    slow.shift()!();
    expect((await pending).body).toEqual({ slow: true });

    expect((await get(`https://${ECHO}/hello`, { sandboxOwner: 'own_c' })).body).toMatchObject({ count: 1 });
    const before = (await get(`https://${ECHO}/hello`, { sandboxOwner: 'own_a' })).body as { count: number };
    expect(before.count).toBeGreaterThan(1);
    await sandboxes.sweep(Date.now() + IDLE_MS);
    expect(sandboxes.stats().sets).toBe(0);
    expect((await get(`https://${ECHO}/hello`, { sandboxOwner: 'own_a' })).body).toMatchObject({ count: 1 });
  });

  it('bounds what an owner writes into its set: beyond it writes are refused (refunded), reads go on; the next start takes in again', async () => {
    const bounded = new Sandboxes({
      secret: Buffer.alloc(32, 3),
      idleMs: IDLE_MS,
      maxSets: 2,
      maxWriteBytes: 1000,
      logger: pino({ level: 'silent' }),
      definitions: [fixture],
    });
    try {
      const send = createHttpClient({
        timeoutMs: 5000,
        maxResponseBytes: 10_000,
        allow: parseAllowList(''),
        retries: 0,
        maxRetryAfterMs: 0,
        sandboxes: bounded,
      });
      const write = (owner: string) =>
        send.send({ method: 'POST', url: new URL(`https://${ECHO}/write`), headers: {}, body: { text: 'x'.repeat(400) }, sandboxOwner: owner });
      const read = (owner: string) => send.send({ method: 'GET', url: new URL(`https://${ECHO}/read`), headers: {}, sandboxOwner: owner });
      expect((await write('own_a')).status).toBe(200);
      expect((await write('own_a')).status).toBe(200);
      expect(await failure(write('own_a'))).toEqual({
        code: 'sandbox_full',
        message:
          'Your sandbox accounts took in 1 KB of data since they started, and may take in 1 KB: nothing more is written to them until they start again from their seed data, after 1 minute unused. Reading still works',
        retryable: false,
        provider_status: null,
      });
      expect((await read('own_a')).status).toBe(200);
      // Another owner's set has its own allowance.
      expect((await write('own_b')).status).toBe(200);
      await bounded.sweep(Date.now() + IDLE_MS);
      expect((await write('own_a')).status).toBe(200);
      send.close();
    } finally {
      await bounded.close();
    }
  });

  it('says so when sandboxes are turned off, and removes its folder when it closes', async () => {
    const off = createHttpClient({ timeoutMs: 5000, maxResponseBytes: 10_000, allow: parseAllowList(''), retries: 0, maxRetryAfterMs: 0 });
    const err = await failure(off.send({ method: 'GET', url: new URL(`https://${ECHO}/hello`), headers: {}, sandboxOwner: 'own_a' }));
    expect(err).toMatchObject({ code: 'sandbox_unavailable', message: expect.stringContaining('SANDBOXES=off') });

    // The folder of a process that ended without closing (kill -9) goes when the next one makes its own.
    const ended = spawnSync(process.execPath, ['-e', '']).pid!;
    const stale = path.join(tmpdir(), `tool-server-sandboxes-${ended}-stale`);
    mkdirSync(stale);
    const other = new Sandboxes({ secret: Buffer.alloc(32, 1), idleMs: IDLE_MS, maxSets: 1, logger: pino({ level: 'silent' }), definitions: [fixture] });
    expect(existsSync(stale)).toBe(true);
    const lease = await other.lease('own_a', ECHO);
    expect(existsSync(stale)).toBe(false);
    lease!.release();
    const folder = path.dirname(socketPaths.at(-1)!);
    expect(existsSync(folder)).toBe(true);
    await other.close();
    expect(existsSync(folder)).toBe(false);
  });
});
