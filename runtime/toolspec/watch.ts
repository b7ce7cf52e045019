// What tells the live catalog that the spec folder may have changed. Two ways, because either alone misses:
// - watchers on the folder and on each provider folder in it. Directories, not files: a file saved by
//   replace-and-rename (as editors and deploys do) is a new file, which a watcher on the old one never sees
//   (Node's recursive watch on Linux watches files, and went deaf after the first such save).
// - a fingerprint of the spec files (sizes, times, inodes), compared every second: it finds what no event
//   reported (network file systems, a watcher the system refused, a folder replaced as a whole).
import { createHash } from 'node:crypto';
import { type FSWatcher, readFileSync, readdirSync, statSync, watch } from 'node:fs';
import path from 'node:path';
import type { Logger } from '../log.ts';
import { isSpecFile } from './loader.ts';

/**
 * A file changed this recently is also hashed: two writes of the same size within one tick of the file
 * system's clock (milliseconds on ext4, a second or two elsewhere) leave the same times behind.
 */
const RECENT_NS = 10_000_000_000n;

interface FileState {
  size: bigint;
  mtime: bigint;
  ctime: bigint;
  ino: bigint;
  /** The content's hash, for a file changed within RECENT_NS of the fingerprint. */
  digest?: string;
}

/** The state of the files the loader reads (`<dir>/<folder>/*.yaml`), cheap to take (stat only) and to compare. */
export class Fingerprint {
  private constructor(
    private readonly files: ReadonlyMap<string, FileState>,
    /** Why the folder could not be read (it is gone, say). */
    private readonly problem?: string,
  ) {}

  static take(dir: string, now = BigInt(Date.now()) * 1_000_000n): Fingerprint {
    const files = new Map<string, FileState>();
    try {
      for (const folder of subfolders(dir)) {
        for (const name of readdirSync(path.join(dir, folder)).filter(isSpecFile)) {
          const file = path.join(dir, folder, name);
          const s = statSync(file, { bigint: true, throwIfNoEntry: false });
          if (!s) continue; // removed while we looked: it is gone
          const state: FileState = { size: s.size, mtime: s.mtimeNs, ctime: s.ctimeNs, ino: s.ino };
          if (s.ctimeNs >= now - RECENT_NS) state.digest = createHash('sha256').update(readFileSync(file)).digest('hex');
          files.set(file, state);
        }
      }
    } catch (err) {
      return new Fingerprint(new Map(), (err as NodeJS.ErrnoException).code ?? String(err));
    }
    return new Fingerprint(files);
  }

  /** Whether the files are the same (contents compared where both fingerprints hashed them). */
  same(other: Fingerprint): boolean {
    if (this.problem !== other.problem || this.files.size !== other.files.size) return false;
    for (const [file, a] of this.files) {
      const b = other.files.get(file);
      if (!b || a.size !== b.size || a.mtime !== b.mtime || a.ctime !== b.ctime || a.ino !== b.ino) return false;
      if (a.digest && b.digest && a.digest !== b.digest) return false;
    }
    return true;
  }
}

/** The provider folders of the spec folder, as the loader finds them. */
export function subfolders(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true })
    .filter((d) => d.isDirectory())
    .map((d) => d.name);
}

/** A watcher on the spec folder and one on each folder in it; `sync` follows folders that come, go or are replaced. */
export class FolderWatchers {
  private readonly watchers = new Map<string, { watcher: FSWatcher; ino: bigint }>();
  /** Folders whose watcher failed, said once each (the periodic check covers them meanwhile). */
  private readonly failed = new Set<string>();

  constructor(
    private readonly dir: string,
    private readonly changed: () => void,
    private readonly logger: Logger,
  ) {}

  sync(): void {
    let folders: string[];
    try {
      folders = [this.dir, ...subfolders(this.dir).map((f) => path.join(this.dir, f))];
    } catch {
      folders = []; // the folder itself is gone: the check reports it, and watchers come back with it
    }
    const wanted = new Map(folders.map((f) => [f, statSync(f, { bigint: true, throwIfNoEntry: false })?.ino]));
    for (const [folder, w] of this.watchers) {
      if (wanted.get(folder) !== w.ino) this.unwatch(folder);
    }
    for (const [folder, ino] of wanted) {
      if (ino !== undefined && !this.watchers.has(folder)) this.arm(folder, ino);
    }
  }

  close(): void {
    for (const folder of [...this.watchers.keys()]) this.unwatch(folder);
  }

  private arm(folder: string, ino: bigint): void {
    try {
      const watcher = watch(folder, { persistent: false }, this.changed);
      // An error (the folder removed, the system's limit on watches) ends the watcher; the next sync arms another.
      watcher.on('error', (err) => {
        this.unwatch(folder);
        if (statSync(folder, { throwIfNoEntry: false })) this.failedOnce(folder, err);
        this.changed();
      });
      this.watchers.set(folder, { watcher, ino });
      this.failed.delete(folder);
    } catch (err) {
      this.failedOnce(folder, err);
    }
  }

  private unwatch(folder: string): void {
    this.watchers.get(folder)?.watcher.close();
    this.watchers.delete(folder);
  }

  private failedOnce(folder: string, err: unknown): void {
    if (this.failed.has(folder)) return;
    this.failed.add(folder);
    const code = (err as NodeJS.ErrnoException).code ?? String(err);
    this.logger.warn({ folder, code }, 'cannot watch a tool spec folder: its changes are found by the check every second instead');
  }
}
