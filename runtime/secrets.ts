// Random tokens, hashing and the files of generated secrets (master key, operator token).
import { createHash, createHmac, hash, randomBytes, timingSafeEqual } from 'node:crypto';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

/**
 * `prefix` + as many uniform base62 characters as carry `bytes` random bytes of entropy (43 for 32 bytes).
 * Each character is a random byte below 248 (4 x 62) taken modulo 62; larger bytes are skipped, so no
 * character is likelier than another.
 */
export function randomToken(prefix: string, bytes = 32): string {
  return base62Token(prefix, bytes, (width) => randomBytes(width + 8));
}

/**
 * A token of randomToken's shape derived from `input` with `secret` (HMAC-SHA-256 blocks in counter mode): the
 * same input always gives the same token, and without the secret nobody can tell which.
 */
export function derivedToken(prefix: string, secret: Buffer, input: string, bytes = 32): string {
  let block = 0;
  return base62Token(prefix, bytes, () => createHmac('sha256', secret).update(`${block++}\0${input}`).digest());
}

function base62Token(prefix: string, bytes: number, source: (width: number) => Buffer): string {
  const width = Math.ceil((bytes * 8) / Math.log2(62));
  let out = prefix;
  while (out.length < prefix.length + width) {
    for (const b of source(width)) {
      if (b < 248) out += BASE62[b % 62];
      if (out.length === prefix.length + width) break;
    }
  }
  return out;
}

/**
 * A short random id for records (URL-safe); never a secret (randomToken makes those). Its bytes come from a pool
 * filled by one CSPRNG read at a time, as crypto.randomUUID buffers its own: a synchronous randomBytes costs
 * tens of µs and every tools/call makes an id.
 */
export function randomId(prefix = '', bytes = 12): string {
  return base62Token(prefix, bytes, pooledRandomBytes);
}

/**
 * randomId's shape, led by its time of creation (ms, 8 base62 characters: good until the year 8900), so that ids
 * sort in the order they were made: a record's id then goes to the end of an ordered index (the embedded store's
 * blocks, MongoDB's B-tree) instead of a random place in it. Ids made in one ms are ordered at random; the 13
 * random characters (9 bytes) keep them unique. The time is only an order: nothing counts on a host's clock.
 */
export function timeOrderedId(prefix: string, now = Date.now()): string {
  let time = '';
  for (let rest = now, i = 0; i < 8; i++, rest = Math.floor(rest / 62)) time = BASE62[rest % 62] + time;
  return randomId(prefix + time, 9);
}

const POOL_BYTES = 4096;
let pool = Buffer.alloc(0);
let poolUsed = 0;

/** Random bytes never handed out twice: the next `width + 8` of the pool (base62Token may ask for more). */
function pooledRandomBytes(width: number): Buffer {
  const size = width + 8;
  if (poolUsed + size > pool.length) {
    pool = randomBytes(Math.max(POOL_BYTES, size));
    poolUsed = 0;
  }
  poolUsed += size;
  return pool.subarray(poolUsed - size, poolUsed);
}

export function sha256(text: string): string {
  return hash('sha256', text, 'hex'); // one call, no Hash object: it runs for every request's key
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
