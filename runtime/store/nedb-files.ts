// nedb appends each write to its data file with fs.promises.appendFile: open, write and close, three trips
// through libuv's thread pool per write, which a call on the file store waits for twice (its charge, then its
// ledger record). nedb's storage module is patched here, once per process, to keep each data file open for
// appending instead: the same bytes reach the same file (and the OS) at the same moment, in one trip. A
// file's handle is closed before nedb replaces the file (compaction writes a new one and renames it over)
// and when its store closes. nedb runs one write at a time per data file, so none is in flight meanwhile.
//
// A file never keeps part of a write that failed: its length after each append is known, and an append that
// fails (a full disk writes what fits, often half a line) is cut back to it at once. Were that cut to fail too,
// the file is cut before its next append or load. A file is loaded only up to its last whole line (a crash in
// the middle of an append): a half line is never read, nor appended to.
import { type FileHandle, open, rm } from 'node:fs/promises';
import { createRequire } from 'node:module';

interface NedbStorage {
  appendFileAsync(filename: string, data: string, options: { encoding: BufferEncoding; mode?: number }): Promise<void>;
  crashSafeWriteFileLinesAsync(filename: string, lines: string[], modes?: unknown): Promise<void>;
}

interface DataFile {
  handle: FileHandle;
  /** Bytes in the file that writes which succeeded put there. */
  length: number;
}

const storage = createRequire(import.meta.url)('@seald-io/nedb/lib/storage.js') as NedbStorage;
const nedbModel = createRequire(import.meta.url)('@seald-io/nedb/lib/model.js') as { serialize(doc: unknown): string };
const files = new Map<string, Promise<DataFile>>();
/** Files whose cut after a failed append failed: the length to cut them back to before anything else. */
const cutBackTo = new Map<string, number>();

/** Closes the data file's append handle, if open (the next append opens it again). */
export async function closeDataFile(filename: string): Promise<void> {
  const file = files.get(filename);
  files.delete(filename);
  await (await file?.catch(() => undefined))?.handle.close();
}

/**
 * Cuts the file back to the length its last successful write left, if a cut is owed, else to its last whole
 * line. Before nedb reads it: a half line would count as corrupt (a small file refuses to load from 10% on).
 */
export async function repairDataFile(filename: string): Promise<void> {
  let handle: FileHandle;
  try {
    handle = await open(filename, 'r+');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return; // nedb creates it
    throw error;
  }
  try {
    const { size } = await handle.stat();
    const length = cutBackTo.get(filename) ?? (await wholeLinesLength(handle, size));
    if (length < size) await handle.truncate(length);
    cutBackTo.delete(filename);
  } finally {
    await handle.close();
  }
}

/** The length of the file up to and with its last newline (the whole file when it ends with one). */
async function wholeLinesLength(handle: FileHandle, size: number): Promise<number> {
  const chunk = Buffer.alloc(64 * 1024);
  for (let end = size; end > 0;) {
    const start = Math.max(0, end - chunk.length);
    const { bytesRead } = await handle.read(chunk, 0, end - start, start);
    const newline = chunk.subarray(0, bytesRead).lastIndexOf(0x0a);
    if (newline >= 0) return start + newline + 1;
    end = start;
  }
  return 0;
}

const replaceFile = storage.crashSafeWriteFileLinesAsync;
storage.crashSafeWriteFileLinesAsync = async (filename, lines, modes) => {
  await closeDataFile(filename);
  try {
    await replaceFile(filename, lines, modes);
  } catch (error) {
    // The old file stays whole; the new one, written in part, would only take room (a full disk).
    await rm(`${filename}~`, { force: true });
    throw error;
  }
  cutBackTo.delete(filename);
};

storage.appendFileAsync = async (filename, data, options) => {
  if (cutBackTo.has(filename)) await repairDataFile(filename);
  let opening = files.get(filename);
  if (!opening) {
    opening = open(filename, 'a', options.mode).then(async (handle) => ({ handle, length: (await handle.stat()).size }));
    files.set(filename, opening);
    opening.catch(() => files.delete(filename)); // the next append tries again
  }
  const file = await opening;
  try {
    await file.handle.appendFile(data, { encoding: options.encoding });
    file.length += Buffer.byteLength(data, options.encoding);
  } catch (error) {
    await file.handle.truncate(file.length).catch(async () => {
      cutBackTo.set(filename, file.length);
      await closeDataFile(filename);
    });
    throw error;
  }
};

/**
 * Appends documents to a data file as nedb's persistNewStateAsync does (one line each, through the storage
 * module patched above), each line made by lineOf.
 */
export function appendDocs(filename: string, docs: object[], fileMode: number): Promise<void> {
  let text = '';
  for (const doc of docs) text += `${lineOf(doc)}\n`;
  if (text === '') return Promise.resolve();
  return storage.appendFileAsync(filename, text, { encoding: 'utf8', mode: fileMode });
}

/**
 * A document as nedb writes it to its file (model.serialize: JSON, a Date as {"$$date":<ms>}, field names
 * checked as it checks them), by the native JSON.stringify of the document with its Dates marked, where
 * nedb's serialize has JSON.stringify call a replacer function for every value: ~15 µs of each call's record
 * on the file store.
 */
export function lineOf(doc: object): string {
  try {
    return JSON.stringify(withDateMarks(doc));
  } catch (error) {
    if (error === HAS_TO_JSON) return nedbModel.serialize(doc);
    throw error;
  }
}

/** Thrown by withDateMarks for a value JSON.stringify would replace by its toJSON(): left to nedb's serializer. */
const HAS_TO_JSON = Symbol('toJSON');

/** `value` with each Date as nedb writes it ({ $$date: ms }; null when invalid, as its toJSON says), copied only along the way to one. */
function withDateMarks(value: unknown): unknown {
  if (typeof value !== 'object' || value === null) return value;
  if (value instanceof Date) {
    const ms = value.getTime();
    return Number.isNaN(ms) ? null : { $$date: ms };
  }
  if (Array.isArray(value)) {
    let copy: unknown[] | undefined;
    for (let i = 0; i < value.length; i++) {
      const marked = withDateMarks(value[i]);
      if (marked !== value[i]) (copy ??= value.slice())[i] = marked;
    }
    return copy ?? value;
  }
  if (typeof (value as { toJSON?: unknown }).toJSON === 'function') throw HAS_TO_JSON;
  const fields = value as Record<string, unknown>;
  let copy: Record<string, unknown> | undefined;
  for (const key in fields) {
    if (!Object.hasOwn(fields, key)) continue;
    const item = fields[key];
    checkFieldName(key, item);
    const marked = withDateMarks(item);
    if (marked === item) continue;
    // A copy without a prototype: an own "__proto__" field stays a field.
    if (!copy) {
      copy = Object.create(null) as Record<string, unknown>;
      for (const k in fields) if (Object.hasOwn(fields, k)) copy[k] = fields[k];
    }
    copy[key] = marked;
  }
  return copy ?? value;
}

/** nedb's rule for field names (model.checkKey): no leading $ but its own markers, no dot. */
function checkFieldName(key: string, value: unknown): void {
  if (
    key.startsWith('$') &&
    !(key === '$$date' && typeof value === 'number') &&
    !(key === '$$deleted' && value === true) &&
    key !== '$$indexCreated' &&
    key !== '$$indexRemoved'
  ) {
    throw new Error('Field names cannot begin with the $ character');
  }
  if (key.includes('.')) throw new Error('Field names cannot contain a .');
}
