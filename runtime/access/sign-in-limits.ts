// Throttling of the dashboard's sign-in and sign-up (rate-limiter-flexible; in MongoDB when the service runs
// on it, so every instance counts the same failures). Failed sign-ins count per e-mail and per client
// address; a success clears the e-mail's count. Sign-ups and OAuth client registrations count per client address.
import { RateLimiterMemory, RateLimiterMongo, RateLimiterRes, type RateLimiterAbstract } from 'rate-limiter-flexible';

export interface SignInLimitSettings {
  failuresPerEmail: number;
  failuresPerAddress: number;
  signupsPerAddress: number;
  registrationsPerAddress: number;
  /** Window of each count, in seconds. */
  windowSeconds: number;
}

export const DEFAULT_SIGN_IN_LIMITS: SignInLimitSettings = {
  failuresPerEmail: 5,
  failuresPerAddress: 30,
  signupsPerAddress: 10,
  registrationsPerAddress: 30,
  windowSeconds: 15 * 60,
};

export class SignInLimits {
  private readonly byEmail: RateLimiterAbstract;
  private readonly byAddress: RateLimiterAbstract;
  private readonly signups: RateLimiterAbstract;
  private readonly registrations: RateLimiterAbstract;

  constructor(s: SignInLimitSettings = DEFAULT_SIGN_IN_LIMITS, mongo?: { client: unknown; dbName?: string }) {
    const make = (points: number, keyPrefix: string): RateLimiterAbstract =>
      mongo
        ? new RateLimiterMongo({ storeClient: mongo.client, dbName: mongo.dbName, tableName: 'rate_limits', points, duration: s.windowSeconds, keyPrefix })
        : new RateLimiterMemory({ points, duration: s.windowSeconds, keyPrefix });
    this.byEmail = make(s.failuresPerEmail, 'signin-email');
    this.byAddress = make(s.failuresPerAddress, 'signin-ip');
    this.signups = make(s.signupsPerAddress, 'signup-ip');
    this.registrations = make(s.registrationsPerAddress, 'oauth-register-ip');
  }

  /** Seconds to wait before another sign-in attempt for this e-mail or from this address; 0 when allowed. */
  async signInBlockedFor(email: string, address: string): Promise<number> {
    const [e, a] = await Promise.all([this.byEmail.get(email), this.byAddress.get(address)]);
    return Math.max(blockedSeconds(e, this.byEmail.points), blockedSeconds(a, this.byAddress.points));
  }

  async failed(email: string, address: string): Promise<void> {
    await Promise.all([this.byEmail.penalty(email, 1), this.byAddress.penalty(address, 1)]);
  }

  async succeeded(email: string): Promise<void> {
    await this.byEmail.delete(email);
  }

  /** Counts a sign-up from this address; the seconds to wait when there were too many, else 0. */
  signUp(address: string): Promise<number> {
    return consumed(this.signups, address);
  }

  /** Counts an OAuth dynamic client registration from this address, like signUp. */
  register(address: string): Promise<number> {
    return consumed(this.registrations, address);
  }
}

/** Counts one event; the seconds to wait when there were too many, else 0. */
async function consumed(limiter: RateLimiterAbstract, address: string): Promise<number> {
  try {
    await limiter.consume(address);
    return 0;
  } catch (err) {
    if (err instanceof RateLimiterRes) return Math.max(1, Math.ceil(err.msBeforeNext / 1000));
    throw err;
  }
}

function blockedSeconds(res: RateLimiterRes | null, points: number): number {
  return res && res.consumedPoints >= points ? Math.max(1, Math.ceil(res.msBeforeNext / 1000)) : 0;
}
