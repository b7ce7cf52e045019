// Throttling of what sends e-mail on request, so the service cannot be used to flood an inbox or its SMTP
// server: a new verification link per owner, password reset links per address and per client (counted for
// unknown addresses too, so the answer says nothing about which exist). In MongoDB when the service runs on it,
// like the sign-in counts, so every instance counts the same requests.
import { RateLimiterMemory, RateLimiterMongo, type RateLimiterAbstract } from 'rate-limiter-flexible';
import { RATE_LIMIT_COLLECTION } from './rate-limit.ts';
import { consumed } from './sign-in-limits.ts';

export const MAIL_LIMITS = {
  /** New verification links an owner may ask for (the sign-up's own is not counted). */
  resendsPerOwner: { points: 3, seconds: 3600 },
  /** Password reset links to one address. */
  resetsPerEmail: { points: 3, seconds: 3600 },
  /** Password reset requests from one client address, whatever the e-mail. */
  resetsPerAddress: { points: 10, seconds: 15 * 60 },
};

export class MailLimits {
  private readonly resends: RateLimiterAbstract;
  private readonly resetsByEmail: RateLimiterAbstract;
  private readonly resetsByAddress: RateLimiterAbstract;

  constructor(mongo?: { client: unknown; dbName?: string }) {
    const make = (limit: { points: number; seconds: number }, keyPrefix: string): RateLimiterAbstract =>
      mongo
        ? new RateLimiterMongo({
            storeClient: mongo.client,
            dbName: mongo.dbName,
            tableName: RATE_LIMIT_COLLECTION,
            points: limit.points,
            duration: limit.seconds,
            keyPrefix,
            disableIndexesCreation: true,
          })
        : new RateLimiterMemory({ points: limit.points, duration: limit.seconds, keyPrefix });
    this.resends = make(MAIL_LIMITS.resendsPerOwner, 'mail-resend-owner');
    this.resetsByEmail = make(MAIL_LIMITS.resetsPerEmail, 'mail-reset-email');
    this.resetsByAddress = make(MAIL_LIMITS.resetsPerAddress, 'mail-reset-ip');
  }

  /** Counts a request for a new verification link; the seconds to wait when there were too many, else 0. */
  resendVerification(ownerId: string): Promise<number> {
    return consumed(this.resends, ownerId);
  }

  /** Counts a password reset request for this e-mail from this client address, like resendVerification. */
  async requestReset(email: string, address: string): Promise<number> {
    return Math.max(...(await Promise.all([consumed(this.resetsByEmail, email), consumed(this.resetsByAddress, address)])));
  }
}
