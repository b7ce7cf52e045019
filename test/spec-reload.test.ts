// Hot reload of tool-specs/, on a copy of the fixture specs: every edit (in place, replace-and-rename, delete, a
// new file, a new provider folder) is served within a second of the write, as MCP clients see it; a broken edit
// keeps the last good catalog and says where (file:line:col); a change no event reports is found by the check
// every second. On demand: SIGHUP (also through WORKERS' primary) and POST /api/admin/specs/reload, which says
// what changed. A custom tool whose spec is gone is orphaned: said in the API, on the server page and in the
// log, left out of tools/list, refused when called, and back when the spec is.
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { cp, mkdir, mkdtemp, readFile, rename, rm, symlink, unlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CHECK_EVERY_MS } from '../runtime/toolspec/live.ts';
import { chromiumAvailable, launchChromium, watchedPage } from './browser/chromium.ts';
import { MONGODB_URL, dropTestDatabases, mongoTestUrl } from './support/mongo.ts';
import { type ServiceProcess, startServiceProcess } from './support/process.ts';
import { type Owner, type TestService, type ToolBinding, createOwner, createServer, startTestService } from './support/service.ts';
import { connectV2 } from './support/mcp-clients.ts';
import { type ToolCalls, rpc, toolCalls } from './support/tool-calls.ts';
import { useDemoUpstream } from './support/upstream.ts';

const FIXTURES = path.resolve('test/fixtures/specs');
const execFileAsync = promisify(execFile);
/** Every edit is served within this long after its write. */
const SERVED_WITHIN_MS = 1000;

/** A fresh copy of the fixture specs (one provider, demo, with demo_echo, demo_move and demo_ping). */
async function specsCopy(): Promise<string> {
  const dir = await mkdtemp(path.join(tmpdir(), 'specs-live-'));
  await cp(FIXTURES, dir, { recursive: true });
  return dir;
}

/**
 * How long this process could not run since it was made: the sum of the gaps past 10 ms between ticks of a
 * 10 ms timer. On a machine busy with other work the service (in this process) waits for a core like the
 * test does; a deadline of the service's own is measured on the time the process could run.
 */
function stallMeter(): { stalledMs: () => number; stop: () => void } {
  let stalled = 0;
  let last = performance.now();
  const tick = setInterval(() => {
    const now = performance.now();
    stalled += Math.max(0, now - last - 20);
    last = now;
  }, 10);
  return { stalledMs: () => stalled, stop: () => clearInterval(tick) };
}

/**
 * Waits until `served` holds; the milliseconds since `since` that the process could run (stalls of a busy
 * machine left out: see stallMeter), or a failure once `deadlineMs` of them have passed.
 */
async function servedAfter(since: number, deadlineMs: number, what: string, served: () => Promise<boolean>): Promise<number> {
  const meter = stallMeter();
  try {
    for (;;) {
      const ran = performance.now() - since - meter.stalledMs();
      if (await served()) return ran;
      if (ran > deadlineMs) {
        throw new Error(`${what}: not served ${deadlineMs} ms after the write (${meter.stalledMs().toFixed(0)} ms more while the machine was busy)`);
      }
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  } finally {
    meter.stop();
  }
}

/** A variant of a spec: another id and title (a new tool), or another description (an edit). */
const withLine = (text: string, key: 'id' | 'provider' | 'title' | 'description', value: string) =>
  text.replace(new RegExp(`^${key}: .*$`, 'm'), `${key}: ${value}`);

/** For a suite: the service on a fresh copy of the fixture specs, an owner, a server of `tools` (accounts on the demo upstream), a client. */
function useServiceOnSpecs(env: Record<string, string> | (() => Record<string, string>), tools: ToolBinding[]) {
  const demo = useDemoUpstream();
  const s = {} as { dir: string; svc: TestService; owner: Owner; server: { serverId: string; key: string }; client: Awaited<ReturnType<typeof connectV2>> };
  beforeAll(async () => {
    s.dir = await specsCopy();
    s.svc = await startTestService({ TOOL_SPECS_DIR: s.dir, ...(typeof env === 'function' ? env() : env) });
    s.owner = await createOwner(s.svc, 100);
    s.server = await createServer(s.svc, s.owner, { accounts: demo.account(), tools });
    s.client = await connectV2(s.svc.url, s.server.serverId, s.server.key);
  });
  afterAll(async () => {
    await s.client?.close();
    await s.svc?.close();
    await rm(s.dir, { recursive: true, force: true });
  });
  return s;
}

const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))];

describe('reloading on every change in the spec folder', () => {
  // Clients poll tools/list every 10 ms while they wait: no rate limit in the way.
  const s = useServiceOnSpecs({ RATE_LIMIT_BURST: '1000000', RATE_LIMIT_PER_MINUTE: '10000000' }, [{ base_tool: 'demo_ping', account: 'demo' }]);
  const tools = toolCalls(() => s.client);

  /** The tools as clients list them (a tool's description ends with what it costs). */
  const listed = async () => (await rpc(s.svc.url, s.server.serverId, s.server.key)).body.result.tools as Array<{ name: string; description: string }>;
  const catalogIds = async () => ((await s.svc.call('GET', '/api/catalog', { token: s.owner.token })).body.tools as Array<{ id: string }>).map((t) => t.id);

  it('serves each of 50 alternating in-place writes and replace-and-renames of one file within a second', async () => {
    const file = path.join(s.dir, 'demo/ping.yaml');
    const original = await readFile(file, 'utf8');
    const latencies: number[] = [];
    for (let i = 1; i <= 50; i++) {
      const description = `Edit ${String(i).padStart(2, '0')}, asking the demo upstream whether it is there.`;
      const text = withLine(original, 'description', description);
      const how = i % 2 ? 'in place' : 'replace-and-rename';
      const since = performance.now();
      if (how === 'in place') await writeFile(file, text);
      else {
        // As editors and deploys save: a new file beside the old one, renamed over it.
        await writeFile(`${file}.tmp-${i}`, text);
        await rename(`${file}.tmp-${i}`, file);
      }
      const ms = await servedAfter(since, SERVED_WITHIN_MS, `edit ${i} (${how})`, async () =>
        (await listed()).some((t) => t.description.startsWith(description)),
      );
      latencies.push(ms);
    }
    const sorted = [...latencies].sort((a, b) => a - b);
    console.log(
      `hot reload, 50 edits of one file served after (ms): min ${sorted[0].toFixed(0)}, median ${percentile(sorted, 50).toFixed(0)}, ` +
        `p90 ${percentile(sorted, 90).toFixed(0)}, max ${sorted.at(-1)!.toFixed(0)}; in place ${latencies
          .filter((_, i) => i % 2 === 0)
          .map((ms) => ms.toFixed(0))
          .join(' ')}; replace-and-rename ${latencies
          .filter((_, i) => i % 2 === 1)
          .map((ms) => ms.toFixed(0))
          .join(' ')}`,
    );
    expect(Math.max(...latencies)).toBeLessThanOrEqual(SERVED_WITHIN_MS);
    expect(s.svc.logs.filter((l) => l.includes('tool specs not reloaded'))).toEqual([]);
  });

  it('serves a new file, a deleted file, a new provider folder and one moved in whole, each within a second', async () => {
    const ping = await readFile(path.join(s.dir, 'demo/ping.yaml'), 'utf8');
    const provider = await readFile(path.join(s.dir, 'demo/provider.yaml'), 'utf8');
    const has =
      (id: string, present = true) =>
      async () =>
        (await catalogIds()).includes(id) === present;

    let since = performance.now();
    await writeFile(path.join(s.dir, 'demo/pong.yaml'), withLine(withLine(ping, 'id', 'demo_pong'), 'title', 'Pong'));
    await servedAfter(since, SERVED_WITHIN_MS, 'a new file', has('demo_pong'));

    since = performance.now();
    await unlink(path.join(s.dir, 'demo/pong.yaml'));
    await servedAfter(since, SERVED_WITHIN_MS, 'a deleted file', has('demo_pong', false));

    // A folder made in place: the provider first, then its tool (a new watcher follows the new folder).
    since = performance.now();
    await mkdir(path.join(s.dir, 'second'));
    await writeFile(path.join(s.dir, 'second/provider.yaml'), withLine(withLine(provider, 'id', 'second'), 'title', 'Second upstream'));
    await writeFile(path.join(s.dir, 'second/ping.yaml'), withLine(withLine(ping, 'id', 'second_ping'), 'provider', 'second'));
    await servedAfter(since, SERVED_WITHIN_MS, 'a new provider folder', has('second_ping'));
    // ... and a file added to it later.
    since = performance.now();
    await writeFile(path.join(s.dir, 'second/pong.yaml'), withLine(withLine(ping, 'id', 'second_pong'), 'provider', 'second'));
    await servedAfter(since, SERVED_WITHIN_MS, 'a new file in the new folder', has('second_pong'));

    // A folder prepared elsewhere and moved in whole, as a deploy does.
    const staging = await mkdtemp(path.join(tmpdir(), 'specs-staging-'));
    await mkdir(path.join(staging, 'third'));
    await writeFile(path.join(staging, 'third/provider.yaml'), withLine(withLine(provider, 'id', 'third'), 'title', 'Third upstream'));
    await writeFile(path.join(staging, 'third/ping.yaml'), withLine(withLine(ping, 'id', 'third_ping'), 'provider', 'third'));
    since = performance.now();
    await rename(path.join(staging, 'third'), path.join(s.dir, 'third'));
    await servedAfter(since, SERVED_WITHIN_MS, 'a provider folder moved in', has('third_ping'));

    since = performance.now();
    await rm(path.join(s.dir, 'second'), { recursive: true });
    await rm(path.join(s.dir, 'third'), { recursive: true });
    await servedAfter(since, SERVED_WITHIN_MS, 'two provider folders deleted', async () => {
      const ids = await catalogIds();
      return !ids.includes('second_ping') && !ids.includes('third_ping');
    });
    expect(await catalogIds()).toEqual(['demo_echo', 'demo_move', 'demo_ping']);
    await rm(staging, { recursive: true, force: true });
  });

  it('keeps the last good catalog when an edit breaks it, says where (file:line:col), and serves the fix', async () => {
    const file = path.join(s.dir, 'demo/ping.yaml');
    const good = await readFile(file, 'utf8');
    const before = (await listed()).find((t) => t.name === 'demo_ping')!.description;
    const errorsBefore = s.svc.logs.filter((l) => l.includes('tool specs not reloaded')).length;
    await writeFile(file, good.replace('path: /ping', 'path: /ping/{{args.nope}}'));
    await servedAfter(performance.now(), SERVED_WITHIN_MS, 'the broken edit reported', async () =>
      s.svc.logs.some((l, i) => i >= errorsBefore && l.includes('tool specs not reloaded')),
    );
    const line = JSON.parse(s.svc.logs.filter((l) => l.includes('tool specs not reloaded')).at(-1)!);
    const shown = path.relative(process.cwd(), file);
    const row = good.split('\n').findIndex((l) => l.includes('path: /ping')) + 1;
    expect(line.problems).toEqual([
      expect.stringMatching(new RegExp(`^${shown.replace(/[.\\/]/g, '\\$&')}:${row}:\\d+ /request/path unknown variable "args.nope"`)),
    ]);
    // Clients keep the last good tool, and it still works.
    expect((await listed()).find((t) => t.name === 'demo_ping')!.description).toBe(before);
    expect(await tools.ok('demo_ping')).toEqual({ ok: true });

    const fixed = withLine(good, 'description', 'Fixed, asking the demo upstream whether it is there.');
    const since = performance.now();
    await writeFile(file, fixed);
    await servedAfter(since, SERVED_WITHIN_MS, 'the fix', async () => (await listed()).some((t) => t.description.startsWith('Fixed,')));
  });

  it('finds within the periodic check a change that no event reports: a spec linked from elsewhere, edited there', async () => {
    const outside = await mkdtemp(path.join(tmpdir(), 'specs-outside-'));
    const ping = await readFile(path.join(s.dir, 'demo/ping.yaml'), 'utf8');
    const target = path.join(outside, 'linked.yaml');
    await writeFile(target, withLine(withLine(ping, 'id', 'demo_linked'), 'title', 'Linked, first version'));
    await symlink(target, path.join(s.dir, 'demo/linked.yaml'));
    await servedAfter(performance.now(), SERVED_WITHIN_MS, 'the link', async () => (await catalogIds()).includes('demo_linked'));
    const title = async () =>
      ((await s.svc.call('GET', '/api/catalog', { token: s.owner.token })).body.tools as Array<{ id: string; title: string }>).find(
        (t) => t.id === 'demo_linked',
      )?.title;
    const since = performance.now();
    // Written where no watcher of the spec folder looks.
    await writeFile(target, withLine(withLine(ping, 'id', 'demo_linked'), 'title', 'Linked, second version'));
    const ms = await servedAfter(since, CHECK_EVERY_MS + SERVED_WITHIN_MS, 'an edit behind a link', async () => (await title()) === 'Linked, second version');
    console.log(`hot reload, an edit no event reports served after ${ms.toFixed(0)} ms (the check runs every second)`);
    expect(s.svc.logs.some((l) => l.includes('"trigger":"check"') && l.includes('tool specs reloaded'))).toBe(true);
    await unlink(path.join(s.dir, 'demo/linked.yaml'));
    await rm(outside, { recursive: true, force: true });
  });
});

// On demand (watching off, as an operator who deploys and then reloads would run it), on each store: the
// orphan lookup is a query of the custom tools.
const stores = [
  { name: 'embedded store', env: () => ({}), enabled: true },
  {
    name: 'MongoDB',
    env: () => ({ MONGODB_URL: mongoTestUrl('spec_reload').url, MASTER_KEY: randomBytes(32).toString('hex') }),
    enabled: Boolean(MONGODB_URL),
  },
];

for (const store of stores) {
  describe.runIf(store.enabled)(`reloading on demand, and orphaned custom tools (${store.name})`, () => {
    afterAll(dropTestDatabases); // registered first: runs after the service has closed
    const s = useServiceOnSpecs(
      () => ({ WATCH_SPECS: 'false', ...store.env() }),
      [
        { base_tool: 'demo_ping', account: 'demo', name: 'ping' },
        { base_tool: 'demo_echo', account: 'demo' },
      ],
    );
    const calls: ToolCalls = toolCalls(() => s.client);

    const reload = (token = s.svc.operatorToken) => s.svc.call('POST', '/api/admin/specs/reload', { token });
    const tools = async () =>
      (await s.svc.call('GET', `/api/servers/${s.server.serverId}/tools`, { token: s.owner.token })).body.tools as Array<Record<string, any>>;
    const listed = async () => ((await rpc(s.svc.url, s.server.serverId, s.server.key)).body.result.tools as Array<{ name: string }>).map((t) => t.name);

    it('POST /api/admin/specs/reload reloads now and says what changed; only for the operator', async () => {
      const ping = await readFile(path.join(s.dir, 'demo/ping.yaml'), 'utf8');
      await writeFile(path.join(s.dir, 'demo/pong.yaml'), withLine(withLine(ping, 'id', 'demo_pong'), 'title', 'Pong'));
      await writeFile(path.join(s.dir, 'demo/ping.yaml'), withLine(ping, 'description', 'Changed on disk.'));
      await unlink(path.join(s.dir, 'demo/move.yaml'));

      expect((await reload(s.owner.token)).status).toBe(401);
      const res = await reload();
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({
        reloaded: true,
        tools: { added: ['demo_pong'], removed: ['demo_move'], changed: ['demo_ping'] },
        providers: { added: [], removed: [], changed: [] },
        catalog: { tools: 3, providers: 1 },
        orphaned: [],
      });
      expect((await s.svc.call('GET', '/api/catalog', { token: s.owner.token })).body.tools.map((t: { id: string }) => t.id)).toEqual([
        'demo_echo',
        'demo_ping',
        'demo_pong',
      ]);
      // Nothing changed since: said so.
      expect((await reload()).body).toMatchObject({ reloaded: true, tools: { added: [], removed: [], changed: [] } });
      expect(s.svc.logs.some((l) => l.includes('tool specs reloaded: nothing changed') && l.includes('"trigger":"api"'))).toBe(true);
      await writeFile(path.join(s.dir, 'demo/move.yaml'), await readFile(path.join(FIXTURES, 'demo/move.yaml')));
      await unlink(path.join(s.dir, 'demo/pong.yaml'));
      expect((await reload()).body.tools).toEqual({ added: ['demo_move'], removed: ['demo_pong'], changed: [] });
    });

    it('answers 422 with every problem (file:line:col) for a broken set, and keeps the last good catalog', async () => {
      const file = path.join(s.dir, 'demo/echo.yaml');
      const good = await readFile(file, 'utf8');
      await writeFile(file, good.replace('credits: 2', 'credits: two'));
      const res = await reload();
      expect(res.status).toBe(422);
      expect(res.body).toMatchObject({ error: 'Unprocessable Entity', reloaded: false, catalog: { tools: 3, providers: 1 } });
      expect(res.body.message).toBe('The tool specs were not reloaded: 1 problem; the last good catalog stays in use');
      expect(res.body.problems).toEqual([`${path.relative(process.cwd(), file)}:5:10 /credits must be integer`]);
      expect(await calls.ok('demo_echo', { message: 'still here' })).toMatchObject({ echo: 'still here' });
      await writeFile(file, good);
      expect((await reload()).status).toBe(200);
    });

    it('marks a custom tool whose spec is gone as orphaned everywhere, keeps the rest working, and restores it with its spec', async () => {
      const file = path.join(s.dir, 'demo/ping.yaml');
      const spec = await readFile(file, 'utf8');
      await unlink(file);
      const res = await reload();
      expect(res.body.tools.removed).toEqual(['demo_ping']);
      expect(res.body.orphaned).toEqual([{ owner_id: s.owner.id, server_id: s.server.serverId, tool: 'ping', base_tool: 'demo_ping' }]);

      // The API says so, with what to do.
      const ping = (await tools()).find((t) => t.name === 'ping')!;
      expect(ping).toMatchObject({
        status: 'orphaned',
        reason: 'Its tool spec “demo_ping” is gone from this service (deleted or renamed): restore it, or remove this tool.',
      });
      expect((await tools()).find((t) => t.name === 'demo_echo')).toMatchObject({ status: 'ok', reason: null });
      const one = await s.svc.call('GET', `/api/servers/${s.server.serverId}/tools/${ping.id}`, { token: s.owner.token });
      expect(one.body.status).toBe('orphaned');
      const patch = await s.svc.call('PATCH', `/api/servers/${s.server.serverId}/tools/${ping.id}`, { token: s.owner.token, body: { description: 'x' } });
      expect(patch.status).toBe(409);
      expect(patch.body.message).toBe(`The tool ping cannot be changed. ${ping.reason}`);

      // One warning line naming it.
      const warning = s.svc.logs.filter((l) => l.includes('custom tools orphaned')).at(-1);
      expect(JSON.parse(warning!)).toMatchObject({ level: 40, count: 1, tools: [`${s.server.serverId}/ping (demo_ping)`] });

      // Clients: left out of tools/list, the rest of the s.server works, a call says why it fails.
      expect(await listed()).toEqual(['demo_echo']);
      expect(await calls.ok('demo_echo', { message: 'fine' })).toMatchObject({ echo: 'fine' });
      expect(await calls.fails('ping')).toMatchObject({
        code: 'tool_unavailable',
        message: `The tool ping is unavailable: the tool spec it is built on (demo_ping) is gone from this service. The server's owner can remove the tool, or have the spec restored.`,
      });
      // Recorded in the call log, charged nothing.
      const [logged] = (await s.svc.call('GET', '/api/calls?limit=1', { token: s.owner.token })).body.calls;
      expect(logged).toMatchObject({ tool: 'ping', outcome: 'rejected', code: 'tool_unavailable', charged: 0 });
      // An unknown name is still a protocol error.
      expect((await rpc(s.svc.url, s.server.serverId, s.server.key, 'tools/call', { name: 'nothing_here' })).body.error.message).toBe(
        'Unknown tool: nothing_here',
      );

      // Each reload says it again, until the spec is back.
      const warnings = s.svc.logs.filter((l) => l.includes('custom tools orphaned')).length;
      await reload();
      await expect.poll(() => s.svc.logs.filter((l) => l.includes('custom tools orphaned')).length).toBe(warnings + 1);

      await writeFile(file, spec);
      const back = await reload();
      expect(back.body).toMatchObject({ tools: { added: ['demo_ping'] }, orphaned: [] });
      expect((await tools()).find((t) => t.name === 'ping')).toMatchObject({ status: 'ok', reason: null });
      expect(await calls.ok('ping')).toEqual({ ok: true });
      expect(await listed()).toEqual(['demo_echo', 'ping']);
    });
  });
}

describe.skipIf(!chromiumAvailable)('an orphaned tool on the server page (Chromium)', () => {
  const demo = useDemoUpstream();
  let dir: string;
  let svc: TestService;
  let browser: Browser;

  beforeAll(async () => {
    dir = await specsCopy();
    [svc, browser] = await Promise.all([startTestService({ TOOL_SPECS_DIR: dir, WATCH_SPECS: 'false' }), launchChromium()]);
  });
  afterAll(async () => {
    await browser?.close();
    await svc?.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('shows a row that says the spec is gone and what to do, without Try and Edit, and the usual row once the spec is back', { timeout: 90_000 }, async () => {
    const signup = await fetch(`${svc.url}/api/auth/signup`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email: `orphans-${Date.now()}@example.com`, password: 'a long enough passphrase' }),
    });
    const [name, value] = signup.headers.getSetCookie()[0].split(';')[0].split('=');
    const ownerId = ((await signup.json()) as { id: string }).id;
    await svc.call('POST', `/api/admin/owners/${ownerId}/credits`, { token: svc.operatorToken, body: { amount: 100 } });
    const { page, context, problems } = await watchedPage(browser, { url: svc.url, session: { name, value }, timeoutMs: 15_000 });
    try {
      // Set up through the page's own session: an account, a server with two tools.
      const api = (method: string, p: string, body: unknown) =>
        page.evaluate(
          async ([method, p, body]) => {
            const csrf = document.querySelector<HTMLMetaElement>('meta[name="csrf-token"]')!.content;
            const res = await fetch(p, { method, headers: { 'content-type': 'application/json', 'x-csrf-token': csrf }, body: JSON.stringify(body) });
            return res.json();
          },
          [method, p, body] as const,
        );
      await page.goto(`${svc.url}/servers`);
      const account = await api('POST', '/api/accounts', { kind: 'demo', name: 'Demo', base_url: demo.upstream.url, token: demo.upstream.token });
      const server = await api('POST', '/api/servers', { name: 'Orphans', id: 'orphans' });
      const ping = await api('POST', `/api/servers/${server.id}/tools`, { base_tool: 'demo_ping', account_id: account.id, name: 'ping' });
      await api('POST', `/api/servers/${server.id}/tools`, { base_tool: 'demo_echo', account_id: account.id });

      await unlink(path.join(dir, 'demo/ping.yaml'));
      expect((await svc.call('POST', '/api/admin/specs/reload', { token: svc.operatorToken })).body.tools.removed).toEqual(['demo_ping']);
      await page.goto(`${svc.url}/servers/${server.id}`);
      const row = page.getByRole('row', { name: /^ping/ });
      await expect
        .poll(() => row.textContent())
        .toContain('Its tool spec “demo_ping” is gone from this service (deleted or renamed): restore it, or remove this tool.');
      expect(await row.textContent()).toContain('unavailable');
      expect(await row.getByRole('link').count()).toBe(0);
      expect(await row.getByRole('button', { name: 'Remove ping' }).isVisible()).toBe(true);
      // The other tool's row is as usual.
      expect(await page.getByRole('link', { name: 'Try demo_echo' }).isVisible()).toBe(true);
      const shot = path.join(tmpdir(), 'server-orphaned-tool');
      await page.screenshot({ path: `${shot}.png`, fullPage: true });
      await page.setViewportSize({ width: 390, height: 844 });
      // On a phone a row is a card (no table semantics left to find it by).
      await page.locator('tr.row-orphaned').scrollIntoViewIfNeeded();
      expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390);
      await page.screenshot({ path: `${shot}-phone.png` });
      await page.setViewportSize({ width: 1280, height: 900 });
      console.log(`screenshots of the server page with an orphaned tool: ${shot}.png, ${shot}-phone.png`);
      // A bookmarked link to the orphan's own page leads to the server's page, which says why.
      await page.goto(`${svc.url}/servers/${server.id}/tools/${ping.id}`);
      expect(page.url()).toBe(`${svc.url}/servers/${server.id}`);

      await cp(path.join(FIXTURES, 'demo/ping.yaml'), path.join(dir, 'demo/ping.yaml'));
      await svc.call('POST', '/api/admin/specs/reload', { token: svc.operatorToken });
      await page.goto(`${svc.url}/servers/${server.id}`);
      expect(await page.getByRole('link', { name: 'Try ping' }).isVisible()).toBe(true);
      expect(await page.getByRole('row', { name: /^ping/ }).textContent()).not.toContain('is gone');
      expect(problems).toEqual([]);
    } finally {
      await context.close();
    }
  });
});

describe('SIGHUP', () => {
  const OPERATOR_TOKEN = 'op_spec_reload_token_0123456789';
  const processes: ServiceProcess[] = [];
  const dirs: string[] = [];
  afterAll(async () => {
    for (const p of processes) p.child.kill('SIGTERM');
    await Promise.all(processes.map((p) => p.exit));
    await Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true })));
    await dropTestDatabases();
  });

  /** `npm start` on a copy of the specs, watching off; a new tool written, then SIGHUP. */
  async function reloadedBySighup(env: Record<string, string>, reloads: number): Promise<{ url: string; dir: string }> {
    const dir = await specsCopy();
    dirs.push(dir);
    const p = startServiceProcess({ TOOL_SPECS_DIR: dir, LOG_LEVEL: 'info', OPERATOR_TOKEN, DATA_DIR: await mkdtemp(path.join(tmpdir(), 'sighup-')), ...env });
    processes.push(p);
    const url = await p.url;
    // Every worker listens once its own catalog is loaded.
    await expect
      .poll(
        () =>
          p
            .output()
            .split('\n')
            .filter((l) => l.includes('"msg":"tool server listening"')).length,
        { timeout: 45_000 },
      )
      .toBe(reloads);
    const ping = await readFile(path.join(dir, 'demo/ping.yaml'), 'utf8');
    await writeFile(path.join(dir, 'demo/pong.yaml'), withLine(withLine(ping, 'id', 'demo_pong'), 'title', 'Pong'));
    p.child.kill('SIGHUP');
    const reloaded = () =>
      p
        .output()
        .split('\n')
        .filter((l) => l.includes('"msg":"tool specs reloaded"') && l.includes('"added":["demo_pong"]'));
    await expect.poll(() => reloaded().length, { timeout: 45_000 }).toBe(reloads);
    expect(reloaded().every((l) => JSON.parse(l).trigger === 'SIGHUP')).toBe(true);
    // Still serving, with the new tool.
    const owner = await fetch(`${url}/api/admin/owners`, {
      method: 'POST',
      headers: { authorization: `Bearer ${OPERATOR_TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ email: `sighup-${Date.now()}@example.com` }),
    }).then((r) => r.json() as Promise<{ token: string }>);
    const catalog = await fetch(`${url}/api/catalog`, { headers: { authorization: `Bearer ${owner.token}` } }).then((r) => r.json() as Promise<any>);
    expect(catalog.tools.map((t: { id: string }) => t.id)).toContain('demo_pong');
    return { url, dir };
  }

  it(
    'reloads the specs of `npm start` and says what changed; the service keeps serving; so does `npm run admin -- reload-specs`',
    { timeout: 120_000 },
    async () => {
      const { url, dir } = await reloadedBySighup({}, 1);
      const admin = () =>
        execFileAsync(process.execPath, ['--import', 'tsx', '--import', './test/support/loopback-only.ts', 'runtime/admin.ts', 'reload-specs'], {
          env: { ...process.env, ADMIN_URL: url, OPERATOR_TOKEN },
        });
      await unlink(path.join(dir, 'demo/pong.yaml'));
      expect(JSON.parse((await admin()).stdout)).toMatchObject({ reloaded: true, tools: { added: [], removed: ['demo_pong'], changed: [] } });
      // A refused set fails the command (a deploy script stops there), with every problem.
      await writeFile(path.join(dir, 'demo/ping.yaml'), 'id: demo_ping\n');
      const refused = await admin().then(
        () => null,
        (err: { code: number; stderr: string }) => err,
      );
      expect(refused?.code).toBe(1);
      expect(refused?.stderr).toMatch(/^422: .*demo\/ping\.yaml:1:1 \/ missing required property/);
    },
  );

  it.runIf(Boolean(MONGODB_URL))(
    'with WORKERS=2, the primary passes SIGHUP on to every worker',
    async () => {
      await reloadedBySighup({ WORKERS: '2', MONGODB_URL: mongoTestUrl('spec_sighup').url, MASTER_KEY: randomBytes(32).toString('hex') }, 2);
    },
    120_000,
  );
});
