// The embedded store on a real full disk: DATA_DIR on a small tmpfs (mounted by the test; root only, see
// support/tmpfs.ts), a ballast file leaves a little room, clients call a tool until the disk is full, then the
// ballast is deleted (a few KB come free now and then before). No call answered as successful may be lost, none may be charged without a record, a
// revocation made after the disk recovered must hold after a restart, the ledger check must be exact, and
// /readyz must tell the truth within a second all along.
import { afterAll, describe, expect, it, onTestFinished } from 'vitest';
import { openEmbeddedStore } from '../runtime/store/embedded.ts';
import type { Doc } from '../runtime/store/port.ts';
import { watchLoopLag } from './support/loop-lag.ts';
import { connectV1 } from './support/mcp-clients.ts';
import { type ServiceProcess, apiCall, fixtureEnv, pingCaller, startServiceProcess } from './support/process.ts';
import { CAN_MOUNT, type SmallDisk, mountSmallDisk } from './support/tmpfs.ts';
import { type DemoUpstream, startDemoUpstream } from './support/upstream.ts';

const OPERATOR_TOKEN = 'op_full_disk_test_token_0123456789';
const GRANT = 100_000;
const CLIENTS = 8;

const disks: SmallDisk[] = [];
let upstream: DemoUpstream | undefined;
let proc: ServiceProcess | undefined;
afterAll(async () => {
  proc?.child.kill('SIGKILL');
  await proc?.exit;
  await upstream?.close();
  for (const disk of disks) await disk.unmount();
});

async function smallDisk(bytes: number): Promise<SmallDisk> {
  const disk = await mountSmallDisk(bytes);
  disks.push(disk);
  return disk;
}

const until = async (condition: () => Promise<boolean>, what: string, timeoutMs = 30_000) => {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
};

describe.runIf(CAN_MOUNT)('the embedded store on a full disk', () => {
  it('never keeps in memory what the file lost, refuses writes until it reopened its files, and reopens by itself', async () => {
    const disk = await smallDisk(1024 * 1024);
    const stopped: string[] = [];
    let resumed = 0;
    const store = await openEmbeddedStore({
      dir: `${disk.dir}/data`,
      recoveryIntervalMs: 50,
      onUnavailable: (reason) => stopped.push(reason),
      onAvailable: () => resumed++,
    });
    await store.ensureIndexes([{ collection: 'things', fields: ['k'], unique: true }]);
    const things = store.collection<Doc & { k: number | string }>('things');
    await things.insertOne({ _id: 'kept', k: -1 });
    await disk.fill(16 * 1024);

    const outcomes = await Promise.allSettled(Array.from({ length: 200 }, (_, i) => things.insertOne({ _id: `d${i}`, k: i, pad: 'x'.repeat(300) })));
    const written = outcomes.filter((o) => o.status === 'fulfilled').length;
    expect(written).toBeGreaterThan(0);
    expect(written).toBeLessThan(200);
    for (const o of outcomes) if (o.status === 'rejected') expect(o.reason).toMatchObject({ name: 'StoreUnavailableError', retryAfterSeconds: 10 });
    expect(stopped).toEqual(["the store's disk refuses writes (ENOSPC, no space left on device) (appending to things.db failed)"]);
    // Memory holds what the file holds: the failed inserts are not there, an update is refused and changes nothing.
    expect(await things.countDocuments({})).toBe(written + 1);
    await expect(things.updateOne({ _id: 'kept' }, { $set: { k: -2 } })).rejects.toMatchObject({ name: 'StoreUnavailableError' });
    expect(await things.findOne({ _id: 'kept' })).toMatchObject({ k: -1 });
    expect(await store.status(100)).toMatchObject({ ok: false, reason: "the store's disk refuses writes (ENOSPC, no space left on device)" });

    await disk.empty();
    await until(async () => (await store.status(100)).ok, 'the store to reopen');
    expect(resumed).toBe(1);
    await things.insertOne({ _id: 'after', k: 'after' });
    await expect(things.insertOne({ _id: 'again', k: 'after' })).rejects.toMatchObject({ name: 'DuplicateKeyError', fields: ['k'] });
    await store.close();

    const reopened = await openEmbeddedStore({ dir: `${disk.dir}/data` });
    expect(await reopened.collection('things').countDocuments({})).toBe(written + 2);
    await reopened.close();
  });

  it('loses no acknowledged call or revocation, answers 503 with Retry-After, and /readyz tells the truth throughout', async () => {
    const disk = await smallDisk(8 * 1024 * 1024);
    upstream = await startDemoUpstream();
    const env = fixtureEnv(`${disk.dir}/data`, OPERATOR_TOKEN);
    proc = startServiceProcess(env);
    let base = await proc.url;
    const api = async (method: string, p: string, token: string, body?: unknown) => {
      const { status, headers, body: answer } = await apiCall(base, method, p, token, body);
      return { status, retryAfter: headers.get('retry-after'), body: answer };
    };
    const { owner, serverId, key } = await pingCaller(base, OPERATOR_TOKEN, upstream, GRANT, 'full@example.com');
    const doomed = (await api('POST', `/api/servers/${serverId}/api-keys`, owner.token, { name: 'revoked later' })).body;

    const listTools = async (token: string) =>
      (
        await fetch(`${base}/mcp/${serverId}`, {
          method: 'POST',
          headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
          body: '{"jsonrpc":"2.0","id":1,"method":"tools/list"}',
        })
      ).status;

    // /readyz, every 100 ms from now on: when, what, how fast (on a machine this busy: the loop's lag).
    const lag = watchLoopLag();
    onTestFinished(() => lag.stop());
    const readiness: Array<{ at: number; status: number; ms: number }> = [];
    let watching = true;
    const watcher = (async () => {
      while (watching) {
        const started = Date.now();
        const status = await fetch(`${base}/readyz`).then(
          (res) => res.status,
          () => 0,
        );
        readiness.push({ at: started, status, ms: Date.now() - started });
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    })();

    // Calls until the disk has refused enough of them.
    const answers: Array<{ at: number; status: number; ok: boolean; retryAfter: string | null; providerReached?: boolean; message?: string }> = [];
    const call = async () => {
      const res = await fetch(`${base}/mcp/${serverId}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'demo_ping', arguments: {} } }),
      });
      const body = (await res.json()) as { result?: { isError?: boolean }; error?: { message: string; data?: { provider_reached?: boolean } } };
      answers.push({
        at: Date.now(),
        status: res.status,
        ok: res.status === 200 && body.result?.isError === false,
        retryAfter: res.headers.get('retry-after'),
        providerReached: body.error?.data?.provider_reached,
        message: body.error?.message,
      });
    };
    const sdk = await connectV1(base, serverId, key); // an official client, as an agent would call
    await disk.fill(160 * 1024);
    const refused = () => answers.filter((a) => !a.ok).length;
    let calling = true;
    const clients = Promise.all(
      Array.from({ length: CLIENTS }, async () => {
        const deadline = Date.now() + 60_000;
        while (refused() < 200 && Date.now() < deadline) await call();
      }),
    ).finally(() => (calling = false));
    // Once full, the disk gets a little room now and then (another program's files shrinking), soon taken.
    await until(async () => refused() > 0 || !calling, 'the first refusal');
    while (calling) {
      await disk.release(2048);
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    await clients;
    const firstRefusal = answers.find((a) => !a.ok)?.at ?? Infinity;

    // While the disk is full: management writes are refused too, and nothing refused is in force.
    const created = await api('POST', `/api/servers/${serverId}/api-keys`, owner.token, { name: 'while full' });
    const revokedWhileFull = await api('DELETE', `/api/servers/${serverId}/api-keys/${doomed.id}`, owner.token);
    const doomedWhileFull = await listTools(doomed.key);
    const sdkWhileFull = await sdk.callTool({ name: 'demo_ping', arguments: {} }).then(
      () => 'answered',
      (err: unknown) => String(err),
    );
    await sdk.close();
    await new Promise((resolve) => setTimeout(resolve, 1200)); // a second of /readyz, still full
    const emptied = Date.now();
    await disk.empty();
    await until(async () => (await fetch(`${base}/readyz`)).status === 200, '/readyz to say ready again');
    const recovered = Date.now();
    const revoked = await api('DELETE', `/api/servers/${serverId}/api-keys/${doomed.id}`, owner.token);
    for (let i = 0; i < 20; i++) await call();
    watching = false;
    await watcher;

    // A restart on the same folder, after a crash: what was acknowledged must be in the files already.
    proc.child.kill('SIGKILL');
    await proc.exit;
    const logged = proc.output();
    proc = startServiceProcess(env);
    base = await proc.url;
    const after = {
      doomed: await listTools(doomed.key),
      check: (await api('GET', '/api/admin/ledger/check', OPERATOR_TOKEN)).body,
      calls: (await api('GET', '/api/calls?format=json', owner.token)).body.calls as Array<{ outcome: string; code: string; charged: number }>,
    };
    const acknowledged = answers.filter((a) => a.ok).length;
    const recordedOk = after.calls.filter((c) => c.outcome === 'ok').length;
    const afterProvider = answers.filter((a) => a.providerReached === true).length;
    const readyWhileFull = readiness.filter((r) => r.at >= firstRefusal + 1000 && r.at + r.ms < emptied && r.status === 200).length;
    console.log(
      `full disk: ${acknowledged} calls acknowledged, ${acknowledged - recordedOk} of them lost after a restart; ${refused()} refused ` +
        `(${afterProvider} after the provider answered); ${upstream.requests.length} provider requests; /readyz said ready ${readyWhileFull} times ` +
        `while the disk was full, ready again ${recovered - emptied} ms after space was freed; revocation made after recovery: ` +
        `${after.doomed === 401 ? 'held' : 'lost'} after the restart; ledger check ${after.check.ok ? 'ok' : 'broken'} ` +
        `(kept ${after.check.owners[0]?.kept}, open ${after.check.owners[0]?.open}, difference ${after.check.owners[0]?.difference})`,
    );

    expect(doomedWhileFull).toBe(200); // its refused revocation is not in force
    // The official client's error carries the words: the tool was not run, or (a credit block of the process
    // still live, so nothing had to be written first) it ran and its call could not be recorded.
    expect(sdkWhileFull).toMatch(
      /(the store's disk refuses writes \(ENOSPC, no space left on device\)\. Try again in 10 s\. The tool was not run and keeps no credits\.|The tool ran \(its provider was reached and may have acted\), but the service could not record the call: the store's disk refuses writes \(ENOSPC, no space left on device\))/,
    );
    expect(created).toMatchObject({ status: 503, retryAfter: '10', body: { error: 'Service Unavailable' } });
    expect(created.body.message).toMatch(
      /^The service cannot take this request now: the store's disk refuses writes \(ENOSPC, no space left on device\)\. Try again in 10 s\.$/,
    );
    expect(revokedWhileFull).toMatchObject({ status: 503, retryAfter: '10' });
    expect(revoked.status).toBe(200);
    expect(after.doomed).toBe(401);

    // Every refusal said so, with Retry-After, and whether the provider was reached.
    for (const a of answers.filter((x) => !x.ok)) {
      expect(a).toMatchObject({ status: 503, retryAfter: '10' });
      expect(typeof a.providerReached).toBe('boolean');
      expect(a.message).toMatch(a.providerReached ? /^The tool ran \(its provider was reached/ : /The tool was not run and keeps no credits\.$/);
    }
    // Nothing acknowledged was lost, nothing unacknowledged was kept, every provider request is accounted for.
    expect(recordedOk).toBe(acknowledged);
    // Each call that reached the provider and could not be recorded is refunded with a record of its range: its
    // own (`store_unavailable`), or one `interrupted` record of a killed process's credit block covering several
    // adjacent ranges and the block's unused rest (settlement cannot tell them apart). So the credits those
    // records refund cover every such call (demo_ping costs 1); the ledger check below holds them to the credit.
    const refundedRanges = after.calls.filter((c) => c.code === 'store_unavailable' || c.code === 'interrupted').reduce((n, c) => n + c.charged, 0);
    const sdkReached = sdkWhileFull.includes('The tool ran') ? 1 : 0;
    expect(refundedRanges).toBeGreaterThanOrEqual(afterProvider + sdkReached);
    expect(upstream.requests.length).toBe(acknowledged + afterProvider + sdkReached);
    expect(after.check.ok, JSON.stringify(after.check)).toBe(true);
    expect(after.check.owners[0]).toMatchObject({ granted: GRANT, kept: acknowledged, open: 0, difference: 0, unaccounted: 0, balance: GRANT - acknowledged });

    // /readyz: always within a second; not ready from a second after the first refusal until space came back.
    expect(Math.max(...readiness.map((r) => r.ms))).toBeLessThan(1000 + lag.worstMs());
    const whileFull = readiness.filter((r) => r.at >= firstRefusal + 1000 && r.at + r.ms < emptied);
    expect(whileFull.length).toBeGreaterThan(5);
    expect(whileFull.every((r) => r.status === 503)).toBe(true);
    expect(readiness.filter((r) => r.at > recovered).every((r) => r.status === 200)).toBe(true);
    // The log said why, once.
    expect(logged.match(/the store cannot take writes/g)).toHaveLength(1);
    expect(logged).toContain('ENOSPC');
    expect(logged).not.toMatch(/flush failed|housekeeping failed/); // not said again every few seconds
  }, 180_000);
});
