// OrderedKeys stands in for nedb's AVL tree in every embedded index: the same operations must give the same
// results. The tree itself (nedb's dependency, not ours) is the reference, fed the same random operations.
import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';
import { type Bounds, OrderedKeys, type TreeOptions } from '../runtime/store/ordered-keys.ts';
import type { Doc } from '../runtime/store/port.ts';

const require = createRequire(import.meta.url);
const { AVLTree } = require('@seald-io/binary-search-tree') as { AVLTree: new (options: TreeOptions) => Tree };
const model = require('@seald-io/nedb/lib/model.js') as { compareThings: TreeOptions['compareKeys'] };

interface Tree {
  insert(key: unknown, doc: Doc): void;
  delete(key: unknown, doc?: Doc): void;
  search(key: unknown): Doc[];
  betweenBounds(bounds: Bounds): Doc[];
  executeOnEveryNode(fn: (node: { key?: unknown; data: Doc[] }) => void): void;
}

const options = (unique: boolean): TreeOptions => ({ unique, compareKeys: model.compareThings, checkValueEquality: (a, b) => a === b });

/** A small deterministic generator, so that a failure replays. */
function random(seed: number): () => number {
  return () => {
    seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
    return seed / 2 ** 31;
  };
}

/** Keys of every kind nedb orders: numbers, strings, dates, booleans, null; few enough values that keys repeat. */
function keyOf(next: () => number): unknown {
  const n = Math.floor(next() * 700);
  switch (Math.floor(next() * 6)) {
    case 0:
      return n;
    case 1:
      return `k${String(n).padStart(4, '0')}`;
    case 2:
      return new Date(1_700_000_000_000 + n * 1000);
    case 3:
      return n % 2 === 0;
    case 4:
      return null;
    default:
      return n / 7;
  }
}

const ids = (docs: Doc[]) => docs.map((doc) => doc._id);
const entries = (tree: Tree | OrderedKeys) => {
  const all: Array<[unknown, unknown[]]> = [];
  tree.executeOnEveryNode((node) => Object.hasOwn(node, 'key') && all.push([node.key, ids(node.data)]));
  return all;
};
const outcome = (act: () => unknown) => {
  try {
    return { value: act() };
  } catch (error) {
    const { message, errorType, key } = error as Error & { errorType?: string; key?: unknown };
    return { message, errorType, key };
  }
};

describe('OrderedKeys against nedb’s AVL tree', () => {
  for (const unique of [false, true]) {
    it(`gives the tree's results for ${unique ? 'a unique' : 'an'} index under 6,000 random inserts, deletes, searches and ranges`, () => {
      const next = random(unique ? 7 : 11);
      const [tree, ordered] = [new AVLTree(options(unique)), new OrderedKeys(options(unique))];
      const live: Array<[unknown, Doc]> = [];
      let rising = 0;
      for (let step = 0; step < 6000; step++) {
        const roll = next();
        if (roll < 0.45) {
          // A third of the inserts above every key so far (a record's time), a third a little below (a call
          // that ended after others that began later), the others anywhere.
          const kind = next();
          const rank = kind < 0.33 ? rising++ : Math.max(0, rising - Math.floor(next() * 40));
          const key = kind < 0.67 ? `z${String(rank).padStart(6, '0')}${kind < 0.33 ? '' : step}` : keyOf(next);
          const doc = { _id: `d${step}` } as Doc;
          const [a, b] = [outcome(() => tree.insert(key, doc)), outcome(() => ordered.insert(key, doc))];
          expect(b, `insert ${String(key)}`).toEqual(a);
          if (!('message' in a)) live.push([key, doc]);
        } else if (roll < 0.7 && live.length > 0) {
          // Half of the deletes take the smallest key (the oldest record, as the log's caps do), the others any.
          const smallest = live.reduce((min, entry, i) => (model.compareThings(entry[0], live[min]![0]) < 0 ? i : min), 0);
          const [key, doc] = live.splice(next() < 0.5 ? smallest : Math.floor(next() * live.length), 1)[0]!;
          tree.delete(key, doc);
          ordered.delete(key, doc);
        } else if (roll < 0.85) {
          const key = keyOf(next);
          expect(ids(ordered.search(key)), `search ${String(key)}`).toEqual(ids(tree.search(key)));
        } else {
          const bounds: Bounds = {};
          for (const op of ['$gt', '$gte', '$lt', '$lte'] as const) if (next() < 0.4) bounds[op] = keyOf(next);
          const expected = ids(tree.betweenBounds(bounds));
          expect(ids(ordered.betweenBounds(bounds)), JSON.stringify(bounds)).toEqual(expected);
          expect(ids([...ordered.between(bounds, -1)]), `${JSON.stringify(bounds)} backwards`).toEqual(
            entries(tree)
              .filter(([, docs]) => docs.some((id) => expected.includes(id as string)))
              .reverse()
              .flatMap(([, docs]) => [...docs].reverse()),
          );
        }
      }
      expect(entries(ordered)).toEqual(entries(tree));
      expect(live.length).toBeGreaterThan(600); // keys for several blocks of 256
    });
  }

  it('takes over a tree nedb built, keys and documents in order', () => {
    const tree = new AVLTree(options(false));
    for (let n = 0; n < 1500; n++) tree.insert((n * 7919) % 1000, { _id: `d${n}` } as Doc);
    expect(entries(OrderedKeys.of(tree, options(false)))).toEqual(entries(tree));
    expect(entries(OrderedKeys.of(new AVLTree(options(false)), options(false)))).toEqual([]);
  });

  it('stops a walk where it is left: a page of a long range compares a few keys, not the range', () => {
    let comparisons = 0;
    const counted: TreeOptions = { ...options(true), compareKeys: (a, b) => (comparisons++, model.compareThings(a, b)) };
    const ordered = new OrderedKeys(counted);
    for (let n = 0; n < 5000; n++) ordered.insert(n, { _id: `d${n}` } as Doc);
    expect(comparisons).toBe(4999); // each appended after one comparison
    const page = (bounds: Bounds, direction: 1 | -1, size: number) => {
      const docs: Doc[] = [];
      for (const doc of ordered.between(bounds, direction)) if (docs.push(doc) === size) break;
      return ids(docs);
    };
    comparisons = 0;
    expect(page({ $gte: 1200 }, 1, 3)).toEqual(['d1200', 'd1201', 'd1202']);
    expect(page({ $lt: 4000, $gte: 10 }, -1, 2)).toEqual(['d3999', 'd3998']);
    expect(comparisons).toBeLessThan(40);
  });
});
