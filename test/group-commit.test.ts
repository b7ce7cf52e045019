// Group commit (runtime/billing/group-commit.ts), on its own: which items go into one write, that each caller
// gets its own result in order, that a failed write fails its batch and only its batch, whose async context a
// write runs in, and the per-key form.
import { AsyncLocalStorage } from 'node:async_hooks';
import { describe, expect, it } from 'vitest';
import { GroupCommit, KeyedGroupCommit } from '../runtime/billing/group-commit.ts';

/** A write the test finishes by hand: every call is recorded with the items it got. */
function controlledWrite<R>() {
  const calls: Array<{ key?: string; items: number[]; finish: (results?: R[]) => void; fail: (err: Error) => void }> = [];
  const write = (items: number[], key?: string) => new Promise<R[] | void>((resolve, reject) => calls.push({ key, items, finish: resolve, fail: reject }));
  return { calls, write };
}

const turn = () => new Promise<void>((r) => setImmediate(r));

describe('GroupCommit', () => {
  it('writes the items of one turn together, waiting that turn before the first write', async () => {
    const { calls, write } = controlledWrite<string>();
    const commit = new GroupCommit<number, string>((items) => write(items));
    const results = [1, 2, 3].map((n) => commit.add(n));
    expect(calls).toEqual([]); // not at once: the rest of the turn may still add items
    await turn();
    expect(calls.map((c) => c.items)).toEqual([[1, 2, 3]]);
    calls[0].finish(['one', 'two', 'three']);
    expect(await Promise.all(results)).toEqual(['one', 'two', 'three']);
  });

  it("runs each write in the async context of its batch's first item, not of whoever started the writing", async () => {
    const context = new AsyncLocalStorage<string>();
    const contexts: Array<string | undefined> = [];
    const { calls, write } = controlledWrite<void>();
    const commit = new GroupCommit<number, void>((items) => (contexts.push(context.getStore()), write(items)));
    const first = context.run('call 1', () => commit.add(1));
    await turn();
    // Added while the first write is under way: the second write is theirs, though the first item's writing runs it.
    const later = [context.run('block rest', () => commit.add(2)), context.run('call 3', () => commit.add(3))];
    calls[0].finish();
    await first;
    await turn();
    calls[1].finish();
    await Promise.all(later);
    expect(calls.map((c) => c.items)).toEqual([[1], [2, 3]]);
    expect(contexts).toEqual(['call 1', 'block rest']);
  });

  it('gathers what arrives during a write into the next write, one write at a time', async () => {
    const { calls, write } = controlledWrite<number>();
    const commit = new GroupCommit<number, number>((items) => write(items));
    const first = commit.add(1);
    await turn();
    const later = [2, 3, 4].map((n) => commit.add(n));
    await turn();
    expect(calls.map((c) => c.items)).toEqual([[1]]); // the second batch waits for the first write
    calls[0].finish([10]);
    expect(await first).toBe(10);
    await turn();
    expect(calls.map((c) => c.items)).toEqual([[1], [2, 3, 4]]);
    calls[1].finish([20, 30, 40]);
    expect(await Promise.all(later)).toEqual([20, 30, 40]);
  });

  it('fails every item of a failed write, and only those; the next batch is still written', async () => {
    const { calls, write } = controlledWrite<void>();
    const commit = new GroupCommit<number, void>((items) => write(items));
    const doomed = [commit.add(1), commit.add(2)];
    await turn();
    const next = commit.add(3);
    calls[0].fail(new Error('store down'));
    for (const p of doomed) await expect(p).rejects.toThrow('store down');
    await turn();
    expect(calls.map((c) => c.items)).toEqual([[1, 2], [3]]);
    calls[1].finish();
    await expect(next).resolves.toBeUndefined();
  });

  it('idle() waits for everything added so far; onIdle runs once the queue is empty', async () => {
    const { calls, write } = controlledWrite<void>();
    let idled = 0;
    const commit = new GroupCommit<number, void>(
      (items) => write(items),
      () => idled++,
    );
    void commit.add(1);
    let settled = false;
    const idle = commit.idle().then(() => (settled = true));
    await turn();
    void commit.add(2);
    calls[0].finish();
    await turn();
    expect(settled).toBe(false); // item 2 is still being written
    expect(idled).toBe(0);
    calls[1].finish();
    await idle;
    expect(idled).toBe(1);
  });
});

describe('KeyedGroupCommit', () => {
  it('batches per key, so a slow key does not hold another back', async () => {
    const { calls, write } = controlledWrite<string>();
    const commit = new KeyedGroupCommit<number, string>((key, items) => write(items, key));
    const a = [commit.add('a', 1), commit.add('a', 2)];
    const b = commit.add('b', 3);
    await turn();
    expect(calls.map((c) => [c.key, c.items])).toEqual([
      ['a', [1, 2]],
      ['b', [3]],
    ]);
    calls[1].finish(['b3']);
    expect(await b).toBe('b3'); // while a's write is still in flight
    calls[0].finish(['a1', 'a2']);
    expect(await Promise.all(a)).toEqual(['a1', 'a2']);
  });

  it('starts afresh for a key whose work is done, and idle() waits for every key', async () => {
    const { calls, write } = controlledWrite<void>();
    const commit = new KeyedGroupCommit<number, void>((key, items) => write(items, key));
    const first = commit.add('a', 1);
    await turn();
    calls[0].finish();
    await first;
    await turn();
    const again = commit.add('a', 2);
    const other = commit.add('b', 3);
    let settled = false;
    const idle = commit.idle().then(() => (settled = true));
    await turn();
    expect(calls.map((c) => [c.key, c.items])).toEqual([
      ['a', [1]],
      ['a', [2]],
      ['b', [3]],
    ]);
    calls[1].finish();
    await again;
    await turn();
    expect(settled).toBe(false);
    calls[2].finish();
    await Promise.all([other, idle]);
    expect(settled).toBe(true);
  });
});
