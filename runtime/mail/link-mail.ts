// The e-mails that prove an address: verification after open sign-up, and the password reset link. Each link
// is a single-use token (access/email-links.ts) in the URL's fragment, so it never reaches a server's log or
// a Referer header; the page at the link posts it to the API.
import { type EmailLinks, LINK_LIFETIME_MS } from '../access/email-links.ts';
import type { OwnerDoc, Owners } from '../access/owners.ts';
import type { Logger } from '../log.ts';
import { messages, renderMail } from './messages.ts';
import type { Outbox } from './outbox.ts';

export class LinkMail {
  constructor(
    private readonly o: {
      outbox: Outbox;
      links: EmailLinks;
      owners: Owners;
      /** Read at each message (the URL is completed once the port is known). */
      site: { publicUrl: string };
      logger: Logger;
    },
  ) {}

  /** Sends (again) the link that verifies the owner's address; the earlier one stops working. */
  async sendVerification(owner: OwnerDoc): Promise<void> {
    const { token, expiresAt } = await this.o.links.issue('verify_address', owner._id, owner.email);
    const publicUrl = this.o.site.publicUrl;
    const content = messages.verifyAddress({ publicUrl, link: `${publicUrl}/verify-email#${token}`, hours: LINK_LIFETIME_MS.verify_address / 3_600_000 });
    await this.o.outbox.enqueue({ kind: 'verify_address', ownerId: owner._id, to: owner.email, expiresAt, ...renderMail(content) });
  }

  /**
   * Sends a password reset link when an owner has this address, nothing otherwise, off the caller's path: the
   * caller answers the same, as fast, either way. A failure is logged (the person asks again).
   */
  requestPasswordReset(email: string): void {
    void this.sendPasswordReset(email).catch((err) => this.o.logger.error({ err }, 'cannot queue a password reset e-mail'));
  }

  private async sendPasswordReset(email: string): Promise<void> {
    const owner = await this.o.owners.byEmail(email);
    if (!owner) return;
    const { token, expiresAt } = await this.o.links.issue('password_reset', owner._id, owner.email);
    const publicUrl = this.o.site.publicUrl;
    const content = messages.passwordReset({ publicUrl, link: `${publicUrl}/reset-password#${token}`, minutes: LINK_LIFETIME_MS.password_reset / 60_000 });
    await this.o.outbox.enqueue({ kind: 'password_reset', ownerId: owner._id, to: owner.email, expiresAt, ...renderMail(content) });
  }
}
