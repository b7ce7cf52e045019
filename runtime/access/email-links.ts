// The single-use links the service e-mails to owners: address verification and password reset. A link's token
// (32 random bytes) is stored only as its SHA-256, with the owner, the address it was sent to and its expiry;
// using it deletes it (one atomic delete: two uses cannot both succeed). A new link of a purpose replaces the
// owner's earlier ones, so only the newest mail works.
import { randomToken, sha256 } from '../secrets.ts';
import type { StoreClock } from '../store/clock.ts';
import type { Collection, Doc, Store } from '../store/port.ts';

export type LinkPurpose = 'verify_address' | 'password_reset';

/** How long each kind of link works. */
export const LINK_LIFETIME_MS: Record<LinkPurpose, number> = {
  verify_address: 24 * 3_600_000,
  password_reset: 60 * 60_000,
};

interface EmailLinkDoc extends Doc {
  /** _id is the SHA-256 of the token. */
  purpose: LinkPurpose;
  owner_id: string;
  /** The address the link was sent to: verifying proves this one (the owner's address may have changed since). */
  email: string;
  created_at: Date;
  expires_at: Date;
}

export class EmailLinks {
  private readonly links: Collection<EmailLinkDoc>;

  private readonly clock: StoreClock;

  constructor(store: Store) {
    this.links = store.collection<EmailLinkDoc>('email_links');
    // Expiries in the store's time, as every lifetime: no host's clock decides whether a link still works.
    this.clock = store.clock;
  }

  /** A new link's token (returned this once) and its expiry; the owner's earlier links of this purpose stop working. */
  async issue(purpose: LinkPurpose, ownerId: string, email: string): Promise<{ token: string; expiresAt: Date }> {
    await this.links.deleteMany({ owner_id: ownerId, purpose });
    const token = randomToken('', 32);
    const now = this.clock.date();
    const expiresAt = new Date(now.getTime() + LINK_LIFETIME_MS[purpose]);
    await this.links.insertOne({ _id: sha256(token), purpose, owner_id: ownerId, email, created_at: now, expires_at: expiresAt });
    return { token, expiresAt };
  }

  /** A link's owner and address while it works, without using it (to check what comes with it first); else null. */
  async peek(purpose: LinkPurpose, token: string): Promise<{ ownerId: string; email: string } | null> {
    if (typeof token !== 'string' || token.length > 200) return null;
    const doc = await this.links.findOne({ _id: sha256(token), purpose, expires_at: { $gt: this.clock.date() } });
    return doc && { ownerId: doc.owner_id, email: doc.email };
  }

  /** Uses a link: its owner and address, or null when it is unknown, used, replaced, expired or of another purpose. */
  async use(purpose: LinkPurpose, token: string): Promise<{ ownerId: string; email: string } | null> {
    if (typeof token !== 'string' || token.length > 200) return null;
    const hash = sha256(token);
    const doc = await this.links.findOne({ _id: hash, purpose });
    // Deleted whether or not it is still valid: the delete is the claim, so only one use wins.
    if (!doc || (await this.links.deleteOne({ _id: hash, purpose })) !== 1) return null;
    return doc.expires_at > this.clock.date() ? { ownerId: doc.owner_id, email: doc.email } : null;
  }

  /** Every link of the owner of this purpose stops working (a password reset used, an address verified). */
  async revokeAll(ownerId: string, purpose: LinkPurpose): Promise<void> {
    await this.links.deleteMany({ owner_id: ownerId, purpose });
  }

  /** Deletes expired links (refused anyway; MongoDB's TTL index does it too). */
  sweep(): Promise<number> {
    return this.links.deleteMany({ expires_at: { $lte: this.clock.date() } });
  }
}
