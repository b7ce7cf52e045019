// Dashboard passwords: scrypt (memory-hard) with a random salt per password, parameters kept with the hash
// so they can be raised later; compared in constant time. Rules: 10-256 characters, not a common password.
import { randomBytes, scrypt, timingSafeEqual } from 'node:crypto';

/** N=2^15, r=8: 32 MiB and tens of milliseconds per hash on our machines. */
const PARAMS = { N: 32768, r: 8, p: 1 };
const KEY_BYTES = 32;

/** scrypt computations at once: each holds 32 MiB and a core for tens of ms, so more only share the cores. */
const CONCURRENT = 2;
/** Past this many waiting, the caller is told to come back (503) rather than queue behind a flood of attempts. */
const MAX_WAITING = 32;

/** Too many passwords are being hashed or checked at this moment; nothing was computed for this one. */
export class PasswordsBusyError extends Error {
  constructor() {
    super('The service is busy checking other passwords: try again in a moment');
  }
}

/** A counting semaphore with a bounded queue: the work runs when one of `limit` places is free. */
class Gate {
  private active = 0;
  private readonly waiting: Array<() => void> = [];

  constructor(
    private readonly limit: number,
    private readonly maxWaiting: number,
  ) {}

  async run<T>(work: () => Promise<T>): Promise<T> {
    if (this.active < this.limit) this.active++;
    else if (this.waiting.length >= this.maxWaiting) throw new PasswordsBusyError();
    // The place is handed over by the one that finishes, so `active` counts it already.
    else await new Promise<void>((resolve) => this.waiting.push(resolve));
    try {
      return await work();
    } finally {
      const next = this.waiting.shift();
      if (next) next();
      else this.active--;
    }
  }
}

const gate = new Gate(CONCURRENT, MAX_WAITING);
let checked = 0;
/** Passwords checked against a stored hash since the process started (a metric: sign-ins, password changes). */
export const passwordChecks = (): number => checked;

function derive(password: string, salt: Buffer, p: { N: number; r: number; p: number }): Promise<Buffer> {
  return gate.run(
    () =>
      new Promise((resolve, reject) =>
        scrypt(password.normalize('NFC'), salt, KEY_BYTES, Object.assign({}, p, { maxmem: 256 * p.N * p.r }), (err, key) => (err ? reject(err) : resolve(key))),
      ),
  );
}

/** `scrypt$N$r$p$salt$hash` (base64url parts). */
export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(16);
  const key = await derive(password, salt, PARAMS);
  return ['scrypt', PARAMS.N, PARAMS.r, PARAMS.p, salt.toString('base64url'), key.toString('base64url')].join('$');
}

export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const [scheme, N, r, p, salt, hash] = stored.split('$');
  if (scheme !== 'scrypt' || !hash) return false;
  const expected = Buffer.from(hash, 'base64url');
  const key = await derive(password, Buffer.from(salt, 'base64url'), { N: Number(N), r: Number(r), p: Number(p) });
  checked++;
  return key.length === expected.length && timingSafeEqual(key, expected);
}

/** A hash of a random password: checked against when the e-mail is unknown, so both answers take as long. */
let decoy: Promise<string> | undefined;
export function decoyHash(): Promise<string> {
  decoy ??= hashPassword(randomBytes(24).toString('base64url')).catch((err: unknown) => {
    // A busy moment must not leave a failure behind for every later unknown e-mail.
    decoy = undefined;
    throw err;
  });
  return decoy;
}

/** The most used passwords of public breach lists that meet the length rule (lower-cased). */
const COMMON = new Set([
  '1234567890',
  '12345678910',
  '0123456789',
  '1234567891',
  '1111111111',
  '0000000000',
  '123456789a',
  'qwertyuiop',
  'password12',
  'password123',
  'password1234',
  'passw0rd123',
  'iloveyou12',
  'qwerty1234',
  'qwerty12345',
  'qwerty123456',
  '1q2w3e4r5t',
  '1qaz2wsx3edc',
  'zaq12wsxcde3',
  'abcdefghij',
  'abc1234567',
  'abcd123456',
  'a123456789',
  'asdfghjkl1',
  'football12',
  'baseball12',
  'letmein123',
  'welcome123',
  'admin12345',
  'administrator',
  'changeme123',
  'trustno1234',
  'sunshine12',
  'princess12',
  'dragon1234',
  'monkey1234',
  'master1234',
  'superman12',
  'starwars12',
  'whatever12',
  'passwordpassword',
  'qwertyqwerty',
  '9876543210',
  '987654321a',
  '1q2w3e4r5t6y',
  'q1w2e3r4t5',
  'q1w2e3r4t5y6',
  'aaaaaaaaaa',
  'password1!',
  'p@ssw0rd12',
  'p@ssword123',
  'letmein!23',
  'computer12',
  'michael123',
  'jennifer12',
  'jordan2323',
  'liverpool1',
  'chelsea123',
  'charlie123',
  'shadow1234',
  'ashley1234',
]);

/** Why a password is refused, in words, or null when it is acceptable. */
export function passwordProblem(password: unknown, email?: string): string | null {
  if (typeof password !== 'string') return '"password" must be a string';
  const length = [...password].length;
  if (length < 10) return 'The password must be at least 10 characters long';
  if (length > 256) return 'The password must be at most 256 characters long';
  const lower = password.toLowerCase();
  if (COMMON.has(lower) || /^(.)\1+$/.test(password)) return 'This password is one of the most common ones; choose another';
  if (email && lower === email.toLowerCase()) return 'The password must not be your e-mail address';
  return null;
}
