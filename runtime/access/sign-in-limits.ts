// Throttling of the dashboard's sign-in and sign-up (rate-limiter-flexible; in MongoDB when the service runs
// on it, so every instance counts the same attempts). A sign-in attempt is counted per e-mail and per client
// address *before* its password is checked, so parallel attempts cannot all pass a check none has counted
// yet; a right password gives the attempt back (the e-mail's count starts again). Wrong current passwords
// on the password change count per owner the same way. Sign-ups, OAuth client registrations and client ID
// metadata document fetches count per client address.
import { RateLimiterMemory, RateLimiterMongo, RateLimiterRes, type RateLimiterAbstract } from 'rate-limiter-flexible';
import { RATE_LIMIT_COLLECTION } from './rate-limit.ts';

export interface SignInLimitSettings {
  failuresPerEmail: number;
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
  failuresPerEmail: 5,
  failuresPerAddress: 30,
  signupsPerAddress: 10,
  registrationsPerAddress: 30,
  metadataFetchesPerAddress: 20,
  passwordChangesPerOwner: 5,
  windowSeconds: 15 * 60,
};

export class SignInLimits {
  private readonly byEmail: RateLimiterAbstract;
  private readonly byAddress: RateLimiterAbstract;
  private readonly signups: RateLimiterAbstract;
  private readonly registrations: RateLimiterAbstract;
  private readonly metadataFetches: RateLimiterAbstract;
  private readonly passwordChanges: RateLimiterAbstract;

  constructor(s: SignInLimitSettings = DEFAULT_SIGN_IN_LIMITS, mongo?: { client: unknown; dbName?: string }) {
    const make = (points: number, keyPrefix: string): RateLimiterAbstract =>
      mongo
        ? new RateLimiterMongo({
            storeClient: mongo.client,
            dbName: mongo.dbName,
            tableName: RATE_LIMIT_COLLECTION,
            points,
            duration: s.windowSeconds,
            keyPrefix,
            // Built with the store's indexes (RATE_LIMIT_INDEXES), as for the keys' limits.
            disableIndexesCreation: true,
          })
        : new RateLimiterMemory({ points, duration: s.windowSeconds, keyPrefix });
    this.byEmail = make(s.failuresPerEmail, 'signin-email');
    this.byAddress = make(s.failuresPerAddress, 'signin-ip');
    this.signups = make(s.signupsPerAddress, 'signup-ip');
    this.registrations = make(s.registrationsPerAddress, 'oauth-register-ip');
    this.metadataFetches = make(s.metadataFetchesPerAddress, 'oauth-metadata-ip');
    this.passwordChanges = make(s.passwordChangesPerOwner, 'password-change-owner');
  }

  /** Counts a sign-in attempt for this e-mail from this address, before its password is checked; the seconds to wait when either has none left, else 0. */
  async attemptSignIn(email: string, address: string): Promise<number> {
    return Math.max(...(await Promise.all([consumed(this.byEmail, email), consumed(this.byAddress, address)])));
  }

  /** The password was right: the e-mail's count starts again, and the address gets its attempt back. */
  async signedIn(email: string, address: string): Promise<void> {
    await Promise.all([this.byEmail.delete(email), this.byAddress.reward(address, 1)]);
  }

  /** The password was never checked (the service was busy): the attempt is given back. */
  async signInNotChecked(email: string, address: string): Promise<void> {
    await Promise.all([this.byEmail.reward(email, 1), this.byAddress.reward(address, 1)]);
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
}

/** Counts one event; the seconds to wait when there were too many, else 0. */
export async function consumed(limiter: RateLimiterAbstract, key: string): Promise<number> {
  try {
    await limiter.consume(key);
    return 0;
  } catch (err) {
    if (err instanceof RateLimiterRes) return Math.max(1, Math.ceil(err.msBeforeNext / 1000));
    throw err;
  }
}
