// vitest's global setup: every temporary folder of a test run (os.tmpdir() in the tests, and in the processes they
// start, which inherit TMPDIR) is made inside one folder of the run's own, removed when the run ends. Tests make
// hundreds (services' data folders, spec folders, sockets' homes): without it each run left them in /tmp.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

export default function setup(): () => void {
  const outer = process.env.TMPDIR;
  const root = mkdtempSync(path.join(tmpdir(), 'tool-server-tests-'));
  process.env.TMPDIR = root;
  return () => {
    if (outer === undefined) delete process.env.TMPDIR;
    else process.env.TMPDIR = outer;
    try {
      rmSync(root, { recursive: true, force: true });
    } catch (error) {
      // A tmpfs a failed test left mounted (test/support/tmpfs.ts) cannot be removed: said, not hidden.
      console.warn(`could not remove the test run's temporary folder ${root}: ${String(error)}`);
    }
  };
}
