// The worker threads of plugins' long work (runtime/off-loop.ts), with real threads: owners take turns, a job
// past the time limit is stopped and the pool goes on, and errors arrive as what they were.
import { afterEach, describe, expect, it } from 'vitest';
import { OffLoop } from '../runtime/off-loop.ts';
import { ToolError } from '../runtime/tool-error.ts';

const JOBS = new URL('./fixtures/off-loop/jobs.ts', import.meta.url);
let pool: OffLoop;
afterEach(() => pool?.close());

describe('OffLoop', () => {
  it('serves the owners in turn: one job of another owner waits for at most one of the busy owner’s', { timeout: 60_000 }, async () => {
    pool = new OffLoop({ workers: 1, timeoutMs: 30_000 });
    await pool.run('warm-up', { module: JOBS, name: 'busy', arg: { ms: 0, label: 'warm' } });
    const done: string[] = [];
    const busyOwner = Array.from({ length: 6 }, (_, i) =>
      pool.run<string>('owner-a', { module: JOBS, name: 'busy', arg: { ms: 150, label: `a${i}` } }).then((label) => done.push(label)),
    );
    const other = pool.run<string>('owner-b', { module: JOBS, name: 'busy', arg: { ms: 10, label: 'b' } }).then((label) => done.push(label));
    await Promise.all([...busyOwner, other]);
    expect(done.indexOf('b')).toBeLessThanOrEqual(1);
    expect(done.filter((l) => l.startsWith('a'))).toEqual(['a0', 'a1', 'a2', 'a3', 'a4', 'a5']);
  });

  it('stops a job past the time limit as a refusal of the input, and goes on with the next', { timeout: 60_000 }, async () => {
    pool = new OffLoop({ workers: 1, timeoutMs: 3000 });
    await pool.run('warm-up', { module: JOBS, name: 'busy', arg: { ms: 0, label: 'warm' } });
    const stopped = await pool.run('a', { module: JOBS, name: 'busy', arg: { ms: 60_000, label: 'never' } }).catch((e) => e);
    expect(stopped).toBeInstanceOf(ToolError);
    expect(stopped).toMatchObject({
      code: 'invalid_arguments',
      refund: true,
      message: 'The input took longer than 3 s to convert; make it shorter or simpler',
    });
    expect(await pool.run('a', { module: JOBS, name: 'busy', arg: { ms: 1, label: 'next' } })).toBe('next');
  });

  it('hands a ToolError back as a ToolError, anything else as an error', { timeout: 60_000 }, async () => {
    pool = new OffLoop({ workers: 2, timeoutMs: 30_000 });
    const refused = await pool.run('a', { module: JOBS, name: 'refuse', arg: '"description" is nested too deep' }).catch((e) => e);
    expect(refused).toBeInstanceOf(ToolError);
    expect(refused).toMatchObject({ code: 'invalid_arguments', refund: true, message: '"description" is nested too deep' });
    const failed: Error = await pool.run<never>('a', { module: JOBS, name: 'fail', arg: 'a bug' }).catch((e) => e);
    expect(failed).not.toBeInstanceOf(ToolError);
    expect(failed.message).toBe('a bug');
  });
});
