// Throttling of what sends e-mail on request, so the service cannot be used to flood an inbox or its SMTP
// server: a new verification link per owner, password reset links per address and per client (counted for
// unknown addresses too, so the answer says nothing about which exist). Window counters (window-counter.ts):
// in the store, in its time, when the service runs on MongoDB, like the sign-in counts, so every instance
// counts the same requests.
import type { Store } from '../store/port.ts';
import { type WindowCounter, consumed, windowCounter } from './window-counter.ts';

export const MAIL_LIMITS = {
  /** New verification links an owner may ask for (the sign-up's own is not counted). */
  resendsPerOwner: { points: 3, seconds: 3600 },
  /** Password reset links to one address. */
  resetsPerEmail: { points: 3, seconds: 3600 },
  /** Password reset requests from one client address, whatever the e-mail. */
  resetsPerAddress: { points: 10, seconds: 15 * 60 },
};

export class MailLimits {
  private readonly resends: WindowCounter;
  private readonly resetsByEmail: WindowCounter;
  private readonly resetsByAddress: WindowCounter;

  /** `shared`: where the counters are shared (MongoDB); in memory without it. */
  constructor(shared?: Store) {
    const make = (limit: { points: number; seconds: number }, prefix: string) => windowCounter(limit.points, limit.seconds, prefix, shared);
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
