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
  return storage.appendFileAsync(filename, text, { encoding: 'utf8', mode: fileMode });
}

/**
 * A document as nedb writes it to its file (model.serialize: JSON, a Date as {"$$date":<ms>}, field names
 * checked as it checks them), without the replacer function JSON.stringify would call for every value: on the
 * file store that took ~15 µs of each call's record.
 */
export function lineOf(value: unknown): string {
  if (typeof value !== 'object' || value === null) return JSON.stringify(value);
  if (value instanceof Date) {
    const ms = value.getTime();
    return Number.isNaN(ms) ? 'null' : `{"$$date":${ms}}`; // an invalid Date is null to nedb (its toJSON says so)
  }
  // Whatever JSON.stringify would turn into something else first (toJSON) is left to nedb's own serializer.
  if (typeof (value as { toJSON?: unknown }).toJSON === 'function') return nedbModel.serialize(value);
  if (Array.isArray(value)) {
    let text = '[';
    for (let i = 0; i < value.length; i++) {
      const item: unknown = value[i];
      text += `${i > 0 ? ',' : ''}${item === undefined || typeof item === 'function' || typeof item === 'symbol' ? 'null' : lineOf(item)}`;
    }
    return `${text}]`;
  }
  let text = '{';
  for (const [key, item] of Object.entries(value)) {
    checkFieldName(key, item);
    if (item === undefined || typeof item === 'function' || typeof item === 'symbol') continue;
    text += `${text.length > 1 ? ',' : ''}${JSON.stringify(key)}:${lineOf(item)}`;
  }
  return `${text}}`;
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
