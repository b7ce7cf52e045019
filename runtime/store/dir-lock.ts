// One process per embedded store folder. Two processes on one DATA_DIR (two `npm start` in one folder) each
// keep their own copy of the documents in memory and append to the same files: calls paid twice from one
// balance, acknowledged writes gone after a restart. The lock is a file naming its process; a lock whose
// process is gone (a crash, kill -9) is taken over.
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { link, readFile, stat, unlink, writeFile } from 'node:fs/promises';
import { hostname } from 'node:os';
import path from 'node:path';

export const LOCK_FILE = 'store.lock';
/** A takeover that has not finished within this time was interrupted (its process died): it is ignored. */
const TAKEOVER_STALE_MS = 10_000;

interface Holder {
  pid: number;
  host: string;
  /** When the process started (Linux: /proc/<pid>/stat), so that a recycled pid is not taken for it. */
  started: string | null;
  since: string;
}

export class DataDirLockedError extends Error {
  override readonly name = 'DataDirLockedError';
}

/** Takes the folder's lock, or throws DataDirLockedError naming the process that holds it. Returns the release. */
export async function lockDataDir(dir: string): Promise<() => Promise<void>> {
  const file = path.join(dir, LOCK_FILE);
  const me: Holder = { pid: process.pid, host: hostname(), started: startTimeOf(process.pid), since: new Date().toISOString() };
  for (;;) {
    if (await create(file, me)) break;
    const holder = await readHolder(file);
    if (holder && isRunning(holder)) throw new DataDirLockedError(lockedMessage(dir, file, holder));
    await takeOver(file, holder); // then try again: a process taking over at the same time may win
  }
  return async () => {
    const holder = await readHolder(file);
    if (holder?.pid === me.pid && holder.started === me.started) await unlink(file).catch(() => undefined);
  };
}

/** Creates the lock file whole, atomically (written aside, then linked): false when it exists. */
async function create(file: string, holder: Holder): Promise<boolean> {
  const aside = `${file}.${process.pid}.${randomUUID()}`;
  await writeFile(aside, JSON.stringify(holder), { mode: 0o600 });
  try {
    await link(aside, file);
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw error;
  } finally {
    await unlink(aside).catch(() => undefined);
  }
}

async function readHolder(file: string): Promise<Holder | null> {
  try {
    const holder = JSON.parse(await readFile(file, 'utf8')) as Holder;
    return Number.isInteger(holder.pid) ? holder : null;
  } catch {
    return null; // gone meanwhile, or not ours: replaced
  }
}

function isRunning(holder: Holder): boolean {
  if (holder.host !== hostname()) return true; // another machine's process cannot be checked from here
  try {
    process.kill(holder.pid, 0);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EPERM') return false;
  }
  const started = startTimeOf(holder.pid);
  return started === null || holder.started === null || started === holder.started;
}

/**
 * Removes a stale lock, one process at a time: whoever creates the takeover file checks that the lock is still
 * the stale one it saw, and removes it; the others wait and look again.
 */
async function takeOver(file: string, stale: Holder | null): Promise<void> {
  const guard = `${file}.takeover`;
  const me: Holder = { pid: process.pid, host: hostname(), started: startTimeOf(process.pid), since: new Date().toISOString() };
  if (!(await create(guard, me))) {
    const age = await stat(guard).then(
      (s) => Date.now() - s.mtimeMs,
      () => 0,
    );
    if (age > TAKEOVER_STALE_MS) await unlink(guard).catch(() => undefined);
    else await new Promise((resolve) => setTimeout(resolve, 50));
    return;
  }
  try {
    const current = await readHolder(file);
    if (JSON.stringify(current) === JSON.stringify(stale)) await unlink(file).catch(() => undefined);
  } finally {
    await unlink(guard).catch(() => undefined);
  }
}

/** Linux: the process's start time in clock ticks since boot (field 22 of /proc/<pid>/stat); null elsewhere. */
function startTimeOf(pid: number): string | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19] ?? null;
  } catch {
    return null;
  }
}

function lockedMessage(dir: string, file: string, holder: Holder): string {
  const who = holder.pid === process.pid && holder.host === hostname() ? 'this process' : `process ${holder.pid}`;
  const where = holder.host === hostname() ? '' : ` on host ${holder.host}`;
  return (
    `DATA_DIR ${dir} is in use by ${who}${where} (since ${holder.since}): two processes on one embedded store lose writes. ` +
    `Stop the other process, or give this one another DATA_DIR (several instances share a store through MONGODB_URL). ` +
    `If no such process runs, delete ${file}.`
  );
}
