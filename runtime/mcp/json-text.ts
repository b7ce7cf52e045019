// JSON serialized ahead of time, placed as it is into an answer by stringify(). tools/list entries are
// serialized once per tool and protocol revision (a Notion server's list is ~26 KB: serializing it again
// for every request cost more than the rest of answering).
import { randomBytes } from 'node:crypto';

/** Marks a JsonText's place while the answer around it is serialized; random, so no value can forge one. */
const NONCE = randomBytes(8).toString('hex');
const MARK = new RegExp(`"\\\\u0000${NONCE}:(\\d+)\\\\u0000"`, 'g');
/** Texts of the answer being serialized: stringify() runs synchronously, so one list serves every call. */
let placed: string[] = [];

export class JsonText {
  /** `text` must be valid JSON. */
  constructor(readonly text: string) {}

  toJSON(): string {
    return `\u0000${NONCE}:${placed.push(this.text) - 1}\u0000`;
  }
}

/** JSON.stringify, with every JsonText inside put in as its text. */
export function stringify(value: unknown): string {
  placed = [];
  const text = JSON.stringify(value);
  if (placed.length === 0) return text;
  const texts = placed;
  placed = [];
  return text.replace(MARK, (_, i: string) => texts[Number(i)]!);
}
