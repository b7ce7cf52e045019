// One process per embedded DATA_DIR: a second `npm start` in the same folder refuses to start, naming the
// process that holds it; the lock of a process that died (kill -9) is taken over.
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { hostname, tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { DataDirLockedError, LOCK_FILE } from '../runtime/store/dir-lock.ts';
import { openEmbeddedStore } from '../runtime/store/embedded.ts';
import { type ServiceProcess, startServiceProcess } from './support/process.ts';

const dirs: string[] = [];
const running: ServiceProcess[] = [];
const newDir = async () => {
  const dir = await mkdtemp(path.join(tmpdir(), 'data-dir-lock-'));
  dirs.push(dir);
  return dir;
};
const start = (dataDir: string) => {
  const p = startServiceProcess({ DATA_DIR: dataDir });
  running.push(p);
  return p;
};
const holder = async (dir: string) => JSON.parse(await readFile(path.join(dir, LOCK_FILE), 'utf8')) as { pid: number };

afterAll(async () => {
  for (const p of running) if (p.child.exitCode === null && p.child.signalCode === null) p.child.kill('SIGKILL');
  await Promise.all(running.map((p) => p.exit));
  await Promise.all(dirs.map((dir) => rm(dir, { recursive: true, force: true })));
});

describe('the embedded DATA_DIR lock, with real service processes', () => {
  it('refuses a second process on the same DATA_DIR, naming the first; takes over after kill -9', { timeout: 60_000 }, async () => {
    const dir = await newDir();
    const first = start(dir);
    const firstUrl = await first.url;
    expect(await holder(dir)).toMatchObject({ pid: first.child.pid });

    const second = start(dir);
    second.url.catch(() => undefined); // it never listens
    expect(await second.exit).toBe(1);
    expect(second.output()).toContain(`DATA_DIR ${dir} is in use by process ${first.child.pid}`);
    expect(second.output()).toContain(`delete ${path.join(dir, LOCK_FILE)}`);
    expect(second.output()).not.toMatch(/\n\s+at /); // a message, not a stack trace
    expect((await fetch(`${firstUrl}/healthz`)).status).toBe(200); // the first one is untouched

    first.child.kill('SIGKILL');
    await first.exit;
    const third = start(dir);
    const thirdUrl = await third.url;
    expect((await fetch(`${thirdUrl}/healthz`)).status).toBe(200);
    expect(await holder(dir)).toMatchObject({ pid: third.child.pid });

    third.child.kill('SIGTERM');
    expect(await third.exit).toBe(0);
    await expect(readFile(path.join(dir, LOCK_FILE))).rejects.toMatchObject({ code: 'ENOENT' }); // released on a clean stop
  });
});

describe('the embedded DATA_DIR lock, in one process', () => {
  it('refuses a second open of an open folder, and allows it after close', async () => {
    const dir = await newDir();
    const store = await openEmbeddedStore({ dir });
    await expect(openEmbeddedStore({ dir })).rejects.toThrow(DataDirLockedError);
    await expect(openEmbeddedStore({ dir })).rejects.toThrow(/is in use by this process/);
    await store.close();
    await (await openEmbeddedStore({ dir })).close();
  });

  it('takes over a lock whose pid now belongs to another process (same pid, another start time)', async () => {
    const dir = await newDir();
    const recycled = { pid: process.pid, host: hostname(), started: '1', since: '2020-01-01T00:00:00.000Z' };
    await writeFile(path.join(dir, LOCK_FILE), JSON.stringify(recycled));
    const store = await openEmbeddedStore({ dir });
    expect(await holder(dir)).toMatchObject({ pid: process.pid });
    expect(await holder(dir)).not.toMatchObject({ started: '1' });
    await store.close();
  });

  it('lets only one of several concurrent opens of a folder with a stale lock win', async () => {
    const dir = await newDir();
    await writeFile(path.join(dir, LOCK_FILE), JSON.stringify({ pid: 2 ** 22 + 1, host: hostname(), started: null, since: 'x' }));
    const outcomes = await Promise.allSettled(Array.from({ length: 5 }, () => openEmbeddedStore({ dir })));
    const opened = outcomes.filter((o) => o.status === 'fulfilled');
    expect(opened).toHaveLength(1);
    for (const o of outcomes) if (o.status === 'rejected') expect(o.reason).toBeInstanceOf(DataDirLockedError);
    await (opened[0] as PromiseFulfilledResult<Awaited<ReturnType<typeof openEmbeddedStore>>>).value.close();
  });
});
