// The keys of an embedded index in order, in place of nedb's AVL tree (@seald-io/binary-search-tree): the
// operations nedb's Index calls on its tree, with the tree's results, its order (nedb's compareThings) and its
// unique-constraint error. Keys are held in sorted blocks. A key above all the others, as a call record's time,
// charge key and id mostly are, is appended after one comparison; one near either end (a record written a little
// out of order, the oldest deleted) is placed by comparing with its neighbours; any other is found by binary
// search. The tree made two comparisons per level on the way down and rebalanced on the way back (measured:
// ~40 µs of every call's record, for its three indexes).
import type { Doc } from './port.ts';

export interface TreeOptions {
  unique?: boolean;
  compareKeys: (a: unknown, b: unknown) => number;
  checkValueEquality: (a: Doc, b: Doc) => boolean;
}

/** The bounds of a range, as nedb hands them to an index. */
export type Bounds = Partial<Record<'$gt' | '$gte' | '$lt' | '$lte', unknown>>;

/** Keys in order and, at the same positions, the documents of each key. */
interface Block {
  keys: unknown[];
  data: Doc[][];
}

/** A block is split in two halves when it grows past twice this. */
const BLOCK_SIZE = 256;
/** How many of the last keys an insert compares with (of the first, a delete), one by one, before it searches the whole. */
const NEAR_AN_END = 32;

export class OrderedKeys {
  private blocks: Block[] = [];

  constructor(private readonly options: TreeOptions) {}

  /** The keys and documents of a tree of nedb's (an index it built itself), in the same order. */
  static of(tree: { executeOnEveryNode(fn: (node: { key?: unknown; data: Doc[] }) => void): void }, options: TreeOptions): OrderedKeys {
    const ordered = new OrderedKeys(options);
    // An empty tree's root has no key.
    tree.executeOnEveryNode((node) => Object.hasOwn(node, 'key') && ordered.append(node.key, [...node.data]));
    return ordered;
  }

  insert(key: unknown, doc: Doc): void {
    const last = this.blocks.at(-1);
    if (!last || this.options.compareKeys(key, last.keys.at(-1)) > 0) return this.append(key, [doc]);
    const [b, i] = this.nearTheEnd(key) ?? this.firstAtLeast(key); // within the blocks: the key is not above the last
    const block = this.blocks[b]!;
    if (this.options.compareKeys(block.keys[i], key) === 0) {
      if (this.options.unique) throw uniqueViolation(key);
      block.data[i]!.push(doc);
      return;
    }
    block.keys.splice(i, 0, key);
    block.data.splice(i, 0, [doc]);
    if (block.keys.length > 2 * BLOCK_SIZE) this.blocks.splice(b + 1, 0, { keys: block.keys.splice(BLOCK_SIZE), data: block.data.splice(BLOCK_SIZE) });
  }

  /** Removes `doc` from the key's documents; the key itself when it was its only one (or `doc` is undefined), as the tree does. */
  delete(key: unknown, doc?: Doc): void {
    const [b, i] = this.nearTheStart(key) ?? this.firstAtLeast(key);
    const block = this.blocks[b];
    if (!block || this.options.compareKeys(block.keys[i], key) !== 0) return;
    const docs = block.data[i]!;
    if (docs.length > 1 && doc !== undefined) {
      block.data[i] = docs.filter((other) => !this.options.checkValueEquality(other, doc));
      return;
    }
    block.keys.splice(i, 1);
    block.data.splice(i, 1);
    if (block.keys.length === 0) this.blocks.splice(b, 1);
  }

  /** The documents of the key (the index's own array, as the tree returns it), or none. */
  search(key: unknown): Doc[] {
    const [b, i] = this.firstAtLeast(key);
    const block = this.blocks[b];
    return block && this.options.compareKeys(block.keys[i], key) === 0 ? block.data[i]! : [];
  }

  betweenBounds(bounds: Bounds): Doc[] {
    return [...this.between(bounds, 1)];
  }

  /** The documents whose keys are within `bounds`, in key order (-1: the reverse), one key at a time: a walk that stops early reads no further. */
  *between(bounds: Bounds, direction: 1 | -1): Generator<Doc> {
    const [atLeast, atMost] = [this.lowerBound(bounds), this.upperBound(bounds)];
    const blocks = this.blocks;
    if (direction === 1) {
      for (let [b, i] = this.firstWhere(atLeast); b < blocks.length; b++, i = 0) {
        const { keys, data } = blocks[b]!;
        for (; i < keys.length; i++) {
          if (!atMost(keys[i])) return;
          yield* data[i]!;
        }
      }
      return;
    }
    // Backwards from the last key within the upper bound (the one before the first beyond it).
    let [b, i] = this.firstWhere((key) => !atMost(key));
    for (;;) {
      if (i === 0) {
        if (b === 0) return;
        i = blocks[--b]!.keys.length;
      }
      const { keys, data } = blocks[b]!;
      if (!atLeast(keys[--i])) return;
      const docs = data[i]!;
      for (let j = docs.length - 1; j >= 0; j--) yield docs[j]!;
    }
  }

  /** Every key with its documents, in order (nedb reads the `data` of each: all the index's documents). */
  executeOnEveryNode(fn: (node: { key: unknown; data: Doc[] }) => void): void {
    for (const { keys, data } of this.blocks) for (let i = 0; i < keys.length; i++) fn({ key: keys[i], data: data[i]! });
  }

  private append(key: unknown, docs: Doc[]): void {
    const last = this.blocks.at(-1);
    if (last && last.keys.length < BLOCK_SIZE) {
      last.keys.push(key);
      last.data.push(docs);
    } else this.blocks.push({ keys: [key], data: [docs] });
  }

  /**
   * The position of the first key at or above `key` (not above the last) when it is among the last few: a record
   * written a little after others that began later (calls end out of order) goes there. Those keys were just
   * written: comparing with them is cheaper than a binary search that reads keys all over the heap.
   */
  private nearTheEnd(key: unknown): [number, number] | undefined {
    const b = this.blocks.length - 1;
    const keys = this.blocks[b]!.keys;
    for (let i = keys.length - 2, stop = Math.max(0, keys.length - NEAR_AN_END); i >= stop; i--) {
      if (this.options.compareKeys(keys[i], key) < 0) return [b, i + 1];
    }
    return undefined;
  }

  /** The position of the first key at or above `key` when it is among the first few: the oldest records, which the log's caps delete. */
  private nearTheStart(key: unknown): [number, number] | undefined {
    const keys = this.blocks[0]?.keys ?? [];
    for (let i = 0, stop = Math.min(keys.length, NEAR_AN_END); i < stop; i++) {
      if (this.options.compareKeys(keys[i], key) >= 0) return [0, i];
    }
    return undefined;
  }

  private firstAtLeast(key: unknown): [number, number] {
    return this.firstWhere((other) => this.options.compareKeys(other, key) >= 0);
  }

  /**
   * The position of the first key for which `holds` is true, given that it is false for every key before that
   * one and true for every key after it; [the number of blocks, 0] when it holds for none.
   */
  private firstWhere(holds: (key: unknown) => boolean): [number, number] {
    const blocks = this.blocks;
    let [low, high] = [0, blocks.length];
    while (low < high) {
      const mid = (low + high) >>> 1;
      if (holds(blocks[mid]!.keys.at(-1))) high = mid;
      else low = mid + 1;
    }
    if (low === blocks.length) return [low, 0];
    const keys = blocks[low]!.keys;
    let [first, last] = [0, keys.length - 1]; // it holds for the last
    while (first < last) {
      const mid = (first + last) >>> 1;
      if (holds(keys[mid])) last = mid;
      else first = mid + 1;
    }
    return [low, first];
  }

  /** Whether a key is at or above the bounds' lower bound (the stricter of $gt and $gte). */
  private lowerBound(bounds: Bounds): (key: unknown) => boolean {
    const compare = this.options.compareKeys;
    const [gt, gte] = [Object.hasOwn(bounds, '$gt'), Object.hasOwn(bounds, '$gte')];
    if (gt && (!gte || compare(bounds.$gte, bounds.$gt) <= 0)) return (key) => compare(key, bounds.$gt) > 0;
    if (gte) return (key) => compare(key, bounds.$gte) >= 0;
    return () => true;
  }

  /** Whether a key is at or below the bounds' upper bound (the stricter of $lt and $lte). */
  private upperBound(bounds: Bounds): (key: unknown) => boolean {
    const compare = this.options.compareKeys;
    const [lt, lte] = [Object.hasOwn(bounds, '$lt'), Object.hasOwn(bounds, '$lte')];
    if (lt && (!lte || compare(bounds.$lte, bounds.$lt) >= 0)) return (key) => compare(key, bounds.$lt) < 0;
    if (lte) return (key) => compare(key, bounds.$lte) <= 0;
    return () => true;
  }
}

/** The error the tree throws, which nedb's Index and our store read (errorType, key). */
function uniqueViolation(key: unknown): Error {
  return Object.assign(new Error(`Can't insert key ${JSON.stringify(key)}, it violates the unique constraint`), { key, errorType: 'uniqueViolated' });
}
