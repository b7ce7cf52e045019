// nedb appends each write to its data file with fs.promises.appendFile: open, write and close, three trips
// through libuv's thread pool per write, which a call on the file store waits for twice (its charge, then its
// ledger record). nedb's storage module is patched here, once per process, to keep each data file open for
// appending instead: the same bytes reach the same file (and the OS) at the same moment, in one trip. A
// file's handle is closed before nedb replaces the file (compaction writes a new one and renames it over)
// and when its store closes. nedb runs one write at a time per data file, so none is in flight meanwhile.
import { type FileHandle, open } from 'node:fs/promises';
import { createRequire } from 'node:module';

interface NedbStorage {
  appendFileAsync(filename: string, data: string, options: { encoding: BufferEncoding; mode?: number }): Promise<void>;
  crashSafeWriteFileLinesAsync(filename: string, lines: string[], modes?: unknown): Promise<void>;
}

const storage = createRequire(import.meta.url)('@seald-io/nedb/lib/storage.js') as NedbStorage;
const handles = new Map<string, Promise<FileHandle>>();

/** Closes the data file's append handle, if open (the next append opens it again). */
export async function closeDataFile(filename: string): Promise<void> {
  const handle = handles.get(filename);
  handles.delete(filename);
  await (await handle?.catch(() => undefined))?.close();
}

const replaceFile = storage.crashSafeWriteFileLinesAsync;
storage.crashSafeWriteFileLinesAsync = async (filename, lines, modes) => {
  await closeDataFile(filename);
  return replaceFile(filename, lines, modes);
};

storage.appendFileAsync = async (filename, data, options) => {
  let handle = handles.get(filename);
  if (!handle) {
    handle = open(filename, 'a', options.mode);
    handles.set(filename, handle);
    handle.catch(() => handles.delete(filename)); // the next append tries again
  }
  await (await handle).appendFile(data, { encoding: options.encoding });
};
