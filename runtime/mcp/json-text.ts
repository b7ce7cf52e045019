// JSON serialized ahead of time, placed as it is into an answer by stringify() or serialize(). tools/list
// pages are serialized once per list, protocol revision and page (a Notion server's list is ~26 KB:
// serializing it again for every request cost more than the rest of answering), and kept as UTF-8 bytes too,
// so that an answer carrying one is written without encoding it again.
import { randomBytes } from 'node:crypto';

/** Marks a JsonText's place while the answer around it is serialized; random, so no value can forge one. */
const NONCE = randomBytes(8).toString('hex');
const MARK = new RegExp(`"\\\\u0000${NONCE}:(\\d+)\\\\u0000"`, 'g');
/** JsonTexts of the answer being serialized: serialization runs synchronously, so one list serves every call. */
let placed: JsonText[] = [];

export class JsonText {
  private encoded?: Buffer;

  /** `text` must be valid JSON. */
  constructor(readonly text: string) {}

  /** The text as UTF-8, encoded once. */
  get bytes(): Buffer {
    return (this.encoded ??= Buffer.from(this.text));
  }

  toJSON(): string {
    return `\u0000${NONCE}:${placed.push(this) - 1}\u0000`;
  }
}

/** JSON.stringify, and the JsonTexts placed in it (in the order of their marks). */
function withPlaced(value: unknown): { text: string; texts: JsonText[] } {
  placed = [];
  const text = JSON.stringify(value);
  const texts = placed;
  placed = [];
  return { text, texts };
}

/** JSON.stringify, with every JsonText inside put in as its text. */
export function stringify(value: unknown): string {
  const { text, texts } = withPlaced(value);
  return texts.length === 0 ? text : text.replace(MARK, (_, i: string) => texts[Number(i)]!.text);
}

/** The same JSON as stringify(), as an answer's body: a string, or the UTF-8 bytes when a JsonText is inside (its bytes copied, not encoded again). */
export function serialize(value: unknown): string | Buffer {
  const { text, texts } = withPlaced(value);
  if (texts.length === 0) return text;
  const parts: Buffer[] = [];
  let from = 0;
  for (const m of text.matchAll(MARK)) {
    parts.push(Buffer.from(text.slice(from, m.index)), texts[Number(m[1])]!.bytes);
    from = m.index + m[0].length;
  }
  parts.push(Buffer.from(text.slice(from)));
  return Buffer.concat(parts);
}
