// A small real filesystem that a test can fill: a tmpfs mounted on a new folder, with a ballast file that takes
// all but a few bytes of it and can be deleted again. Mounting needs root: without it, one loud warning and
// the suites that need it are skipped locally; under CI=true (which runs as root) a missing root fails.
import { execFileSync } from 'node:child_process';
import { mkdtemp, open, rm, rmdir, stat, statfs, truncate } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';

export const CAN_MOUNT = process.getuid?.() === 0;

if (!CAN_MOUNT) {
  const message = '\n*** Full-disk tests mount a tmpfs and need root (CI runs as root); they are SKIPPED ***\n';
  if (process.env.CI === 'true') throw new Error(message);
  console.warn(message);
}

export interface SmallDisk {
  dir: string;
  /** Bytes free now. */
  free(): Promise<number>;
  /** Writes a ballast file that leaves `leaveBytes` free (or less: the filesystem counts in pages). */
  fill(leaveBytes: number): Promise<void>;
  /** Frees `bytes` of the ballast (another program's file shrinking): a little room, soon taken again. */
  release(bytes: number): Promise<void>;
  /** Deletes the ballast: the disk has room again. */
  empty(): Promise<void>;
  unmount(): Promise<void>;
}

export async function mountSmallDisk(sizeBytes: number): Promise<SmallDisk> {
  const dir = await mkdtemp(path.join(tmpdir(), 'small-disk-'));
  execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${sizeBytes},mode=0700`, 'tmpfs', dir]);
  const ballast = path.join(dir, 'ballast');
  const free = async () => {
    const { bavail, bsize } = await statfs(dir);
    return bavail * bsize;
  };
  return {
    dir,
    free,
    async fill(leaveBytes) {
      const file = await open(ballast, 'a');
      try {
        const chunk = Buffer.alloc(64 * 1024);
        for (let room = (await free()) - leaveBytes; room > 0; room -= chunk.length) await file.write(chunk, 0, Math.min(room, chunk.length));
      } finally {
        await file.close();
      }
    },
    async release(bytes) {
      const { size } = await stat(ballast);
      await truncate(ballast, Math.max(0, size - bytes));
    },
    empty: () => rm(ballast, { force: true }),
    async unmount() {
      execFileSync('umount', ['-l', dir]);
      await rmdir(dir);
    },
  };
}
