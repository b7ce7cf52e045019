// Random tokens, hashing and the files of generated secrets (master key, operator token).
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

/** `prefix` + base62 of `bytes` random bytes (43 characters for 32 bytes). */
export function randomToken(prefix: string, bytes = 32): string {
  let n = BigInt('0x' + randomBytes(bytes).toString('hex'));
  let out = '';
  const width = Math.ceil((bytes * 8) / Math.log2(62));
  for (let i = 0; i < width; i++) {
    out = BASE62[Number(n % 62n)] + out;
    n /= 62n;
  }
  return prefix + out;
}

/** A short random id for records (URL-safe). */
export function randomId(prefix = '', bytes = 12): string {
  return randomToken(prefix, bytes);
}

export function sha256(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

export function sameSecret(a: string, b: string): boolean {
  const ha = createHash('sha256').update(a).digest();
  const hb = createHash('sha256').update(b).digest();
  return timingSafeEqual(ha, hb);
}

/** Reads a generated secret from dataDir, creating it (mode 0600) the first time. */
export async function generatedSecret(dataDir: string, file: string, make: () => string): Promise<string> {
  const full = path.join(dataDir, file);
  try {
    return (await readFile(full, 'utf8')).trim();
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  await mkdir(dataDir, { recursive: true, mode: 0o700 });
  const value = make();
  try {
    await writeFile(full, value + '\n', { mode: 0o600, flag: 'wx' });
    return value;
  } catch (err) {
    // Another process created it first: use theirs.
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') return (await readFile(full, 'utf8')).trim();
    throw err;
  }
}
