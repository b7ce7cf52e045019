// Throttling of the dashboard's sign-in and sign-up (window-counter.ts; in MongoDB when the service runs on it,
// so every instance counts the same attempts, in the store's time).
//
// A stranger must not be able to keep an owner out by failing on purpose, so a sign-in attempt is counted
// where a guesser is: per e-mail *and client address* (a guesser's address is locked, not the account), per
// address (across e-mails), and per e-mail across every browser that never signed in to it (a guesser spread
// over many addresses locks out new browsers only). A browser that did sign in to the e-mail before carries a
// device cookie (signed with a secret of the service, naming no one) and is counted per device instead, so
// the owner's own browsers still get in whatever strangers do; a stolen device cookie is worth its own
// few attempts, no more. Every attempt is counted *before* its password is checked, so parallel attempts
// cannot all pass a check none has counted yet; a right password gives the attempt back, and so does a
// refusal: attempts refused without a check spend nobody's budget. Wrong current passwords on the password
// change count per owner the same way. Sign-ups, OAuth client registrations and client ID metadata document
// fetches count per client address.
import { createHmac } from 'node:crypto';
import { RateLimiterRes } from 'rate-limiter-flexible';
import { randomToken, sameSecret } from '../secrets.ts';
import type { Store } from '../store/port.ts';
import { type WindowCounter, windowCounter } from './window-counter.ts';

export interface SignInLimitSettings {
  /** Failed sign-ins of one e-mail from one client address. */
  failuresPerEmailAndAddress: number;
  /** Failed sign-ins of one e-mail from every browser that never signed in to it, whatever its address. */
  failuresPerEmail: number;
  /** Failed sign-ins of one e-mail from one browser that signed in to it before (its device cookie). */
  failuresPerDevice: number;
  /** Failed sign-ins from one client address, whatever the e-mail. */
  failuresPerAddress: number;
  signupsPerAddress: number;
  registrationsPerAddress: number;
  /** Client ID metadata documents fetched (not served from the cache) because of one address's requests. */
  metadataFetchesPerAddress: number;
  /** Password changes with a wrong current password, per owner. */
  passwordChangesPerOwner: number;
  /** Window of each count, in seconds. */
  windowSeconds: number;
}

export const DEFAULT_SIGN_IN_LIMITS: SignInLimitSettings = {
  failuresPerEmailAndAddress: 5,
  failuresPerEmail: 20,
  failuresPerDevice: 5,
  failuresPerAddress: 30,
  signupsPerAddress: 10,
  registrationsPerAddress: 30,
  metadataFetchesPerAddress: 20,
  passwordChangesPerOwner: 5,
  windowSeconds: 15 * 60,
};

/** The cookie of a browser that signed in to an e-mail: its device id, signed for that e-mail. */
export const DEVICE_COOKIE = 'ts_device';
/** A device cookie lives this long (each sign-in renews it). */
export const DEVICE_COOKIE_SECONDS = 365 * 86_400;

/** Why a sign-in attempt was refused before its password was checked, and for how long. */
export interface SignInRefusal {
  waitSeconds: number;
  /** The count that ran out: the e-mail from this address, the address, the e-mail from new browsers, or this browser. */
  reason: 'email_and_address' | 'address' | 'email' | 'device';
}

/** One count an attempt is held against: a limiter and the key it counts. */
type Count = { limiter: WindowCounter; key: string; reason: SignInRefusal['reason'] };

export class SignInLimits {
  private readonly byEmailAndAddress: WindowCounter;
  private readonly byEmail: WindowCounter;
  private readonly byDevice: WindowCounter;
  private readonly byAddress: WindowCounter;
  private readonly signups: WindowCounter;
  private readonly registrations: WindowCounter;
  private readonly metadataFetches: WindowCounter;
  private readonly passwordChanges: WindowCounter;
  private readonly deviceSecret: Buffer;

  /** `shared`: where the counters are shared (MongoDB); in memory without it. */
  constructor(o: { deviceSecret: Buffer; settings?: SignInLimitSettings; shared?: Store }) {
    const s = o.settings ?? DEFAULT_SIGN_IN_LIMITS;
    const make = (points: number, prefix: string) => windowCounter(points, s.windowSeconds, prefix, o.shared);
    this.deviceSecret = o.deviceSecret;
    this.byEmailAndAddress = make(s.failuresPerEmailAndAddress, 'signin-email-ip');
    this.byEmail = make(s.failuresPerEmail, 'signin-email');
    this.byDevice = make(s.failuresPerDevice, 'signin-device');
    this.byAddress = make(s.failuresPerAddress, 'signin-ip');
    this.signups = make(s.signupsPerAddress, 'signup-ip');
    this.registrations = make(s.registrationsPerAddress, 'oauth-register-ip');
    this.metadataFetches = make(s.metadataFetchesPerAddress, 'oauth-metadata-ip');
    this.passwordChanges = make(s.passwordChangesPerOwner, 'password-change-owner');
  }

  /** A new device cookie value for a browser that just signed in to `email`. */
  deviceCookie(email: string): string {
    const device = randomToken('', 16);
    return `${device}.${this.deviceSignature(email, device)}`;
  }

  /** The device id of a cookie signed for this e-mail; undefined for none, a forged one, or another e-mail's. */
  deviceOf(cookie: string | undefined, email: string): string | undefined {
    const [device, signature, ...rest] = (cookie ?? '').split('.');
    if (!device || !signature || rest.length) return undefined;
    return sameSecret(signature, this.deviceSignature(email, device)) ? device : undefined;
  }

  /**
   * Counts a sign-in attempt for this e-mail, before its password is checked: from a browser that signed in to
   * it before (`device`), against that device only; otherwise per e-mail and address, per address, and per
   * e-mail across new browsers. Refused (the refusal says which count) when any has none left, and then
   * counted nowhere.
   */
  async attemptSignIn(email: string, address: string, device?: string): Promise<SignInRefusal | null> {
    const counts = this.signInCounts(email, address, device);
    const waits = await Promise.all(counts.map((c) => consumed(c.limiter, c.key)));
    const longest = Math.max(...waits);
    if (longest === 0) return null;
    await Promise.all(counts.map((c) => c.limiter.reward(c.key, 1)));
    return { waitSeconds: longest, reason: counts[waits.indexOf(longest)].reason };
  }

  /** The password was right: the e-mail's counts of this browser start again, and the others get the attempt back. */
  async signedIn(email: string, address: string, device?: string): Promise<void> {
    const [first, ...others] = this.signInCounts(email, address, device);
    await Promise.all([first.limiter.delete(first.key), ...others.map((c) => c.limiter.reward(c.key, 1))]);
  }

  /** The password was never checked (the service was busy): the attempt is given back. */
  async signInNotChecked(email: string, address: string, device?: string): Promise<void> {
    await Promise.all(this.signInCounts(email, address, device).map((c) => c.limiter.reward(c.key, 1)));
  }

  /** Counts a password change of this owner before its current password is checked, like attemptSignIn. */
  attemptPasswordChange(ownerId: string): Promise<number> {
    return consumed(this.passwordChanges, ownerId);
  }

  /** The current password was right: the owner's count starts again. */
  async passwordChanged(ownerId: string): Promise<void> {
    await this.passwordChanges.delete(ownerId);
  }

  /** The current password was never checked (the service was busy): the attempt is given back. */
  async passwordChangeNotChecked(ownerId: string): Promise<void> {
    await this.passwordChanges.reward(ownerId, 1);
  }

  /** Counts a sign-up from this address; the seconds to wait when there were too many, else 0. */
  signUp(address: string): Promise<number> {
    return consumed(this.signups, address);
  }

  /** Counts an OAuth dynamic client registration from this address, like signUp. */
  register(address: string): Promise<number> {
    return consumed(this.registrations, address);
  }

  /** Counts a fetch of a client ID metadata document caused by this address, like signUp. */
  fetchMetadata(address: string): Promise<number> {
    return consumed(this.metadataFetches, address);
  }

  /** What a sign-in attempt counts against, the one a success starts again first. */
  private signInCounts(email: string, address: string, device: string | undefined): Count[] {
    if (device) return [{ limiter: this.byDevice, key: `${email}\0${device}`, reason: 'device' }];
    return [
      { limiter: this.byEmailAndAddress, key: `${email}\0${address}`, reason: 'email_and_address' },
      { limiter: this.byAddress, key: address, reason: 'address' },
      { limiter: this.byEmail, key: email, reason: 'email' },
    ];
  }

  private deviceSignature(email: string, device: string): string {
    return createHmac('sha256', this.deviceSecret).update(`${email}\0${device}`).digest('base64url');
  }
}

/** Counts one event; the seconds to wait when there were too many, else 0. */
async function consumed(limiter: WindowCounter, key: string): Promise<number> {
  try {
    await limiter.consume(key);
    return 0;
  } catch (err) {
    if (err instanceof RateLimiterRes) return Math.max(1, Math.ceil(err.msBeforeNext / 1000));
    throw err;
  }
}
