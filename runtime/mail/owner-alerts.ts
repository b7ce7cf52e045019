// Alerts that reach an owner who is not looking at the dashboard: credits below their alert (once each time the
// balance falls below it; credits added arm it again), an owner's account that needs reconnecting (AccountAlerts,
// told by accounts/connections.ts),
// and an API key used from a network it was never used from (access/key-networks.ts). Each can be turned off
// on Settings or by the one-click unsubscribe link of its e-mail (RFC 8058: List-Unsubscribe and
// List-Unsubscribe-Post headers, and the same link in the text); the link is signed, names the owner and the
// alert, and can do nothing else.
import { createHmac } from 'node:crypto';
import { ALERT_KINDS, ALERT_LABELS, type AlertKind, type OwnerDoc, type Owners, creditAlert } from '../access/owners.ts';
import type { ApiKeys } from '../access/keys.ts';
import type { KeyNetworks, NewNetwork } from '../access/key-networks.ts';
import type { Logger } from '../log.ts';
import { sameSecret } from '../secrets.ts';
import type { Servers } from '../servers/servers.ts';
import { TtlCache } from '../ttl-cache.ts';
import { type MailContent, alertFooter, messages, renderMail } from './messages.ts';
import type { MailKind, Outbox } from './outbox.ts';

/**
 * What the accounts code tells: an owner's account's health became "needs reconnecting" (its owner must sign in
 * to the provider again). Called once per change of state; never throws (a failure is logged).
 */
export interface AccountAlerts {
  accountNeedsReconnect(event: {
    ownerId: string;
    account: { id: string; name: string };
    /** The provider's title (Jira Cloud, Notion...). */
    provider: string;
    /** Why, in words (the provider's answer), or null. */
    reason: string | null;
    /** The dashboard page that reconnects it. */
    reconnectUrl: string;
  }): Promise<void>;
}

const MAIL_KINDS: Record<AlertKind, MailKind> = { credits_low: 'alert_credits', account_reconnect: 'alert_account', key_new_network: 'alert_network' };
/** At most this many new-network e-mails per key a day: a key used from a pool of addresses does not flood its owner. */
export const NETWORK_ALERTS_PER_DAY = 5;
/** How long this instance trusts what it read of an owner's low-credit alert (threshold, already sent). */
const CREDIT_STATE_MS = 30_000;

export class OwnerAlerts implements AccountAlerts {
  private readonly creditStates = new TtlCache<string, { threshold: number; alerted: boolean }>(CREDIT_STATE_MS, 100_000);
  private readonly checking = new Set<string>();

  constructor(
    private readonly o: {
      outbox: Outbox;
      owners: Owners;
      keys: ApiKeys;
      servers: Servers;
      networks: KeyNetworks;
      site: { publicUrl: string; creditsHelp: { text: string; url?: string } };
      /** Signs unsubscribe links (derived from the master key). */
      secret: Buffer;
      logger: Logger;
    },
  ) {}

  /** The one-click unsubscribe token of an owner's alert. */
  unsubscribeToken(ownerId: string, kind: AlertKind): string {
    return `${ownerId}.${kind}.${this.sign(ownerId, kind)}`;
  }

  /** The owner and alert of an unsubscribe token, or null for anything not signed by this service. */
  readUnsubscribeToken(token: unknown): { ownerId: string; kind: AlertKind } | null {
    if (typeof token !== 'string' || token.length > 200) return null;
    const [ownerId, kind, signature, ...rest] = token.split('.');
    if (rest.length || !ownerId || !signature || !(ALERT_KINDS as readonly string[]).includes(kind)) return null;
    return sameSecret(signature, this.sign(ownerId, kind as AlertKind)) ? { ownerId, kind: kind as AlertKind } : null;
  }

  /**
   * A charge left the owner's balance at `balance` (on the hot path: a lookup in memory, and at most one read of
   * the owner per 30 s while the balance is below the alert and the alert not sent).
   */
  creditsCharged(ownerId: string, balance: number): void {
    const known = this.creditStates.get(ownerId);
    if (known && (known.alerted || balance >= known.threshold)) return;
    if (this.checking.has(ownerId)) return;
    this.checking.add(ownerId);
    void this.checkCredits(ownerId, balance)
      .catch((err) => this.o.logger.error({ err, ownerId }, 'cannot check the low-credit alert'))
      .finally(() => this.checking.delete(ownerId));
  }

  /** The owner's credits or alert changed here: read them again at the next charge. */
  forget(ownerId: string): void {
    this.creditStates.delete(ownerId);
  }

  async accountNeedsReconnect(event: Parameters<AccountAlerts['accountNeedsReconnect']>[0]): Promise<void> {
    await this.alert(event.ownerId, 'account_reconnect', () =>
      messages.accountNeedsReconnect({ account: event.account.name, provider: event.provider, reason: event.reason, reconnectUrl: event.reconnectUrl }),
    );
  }

  /** A key was used from a new network (key-networks.ts): told, at most NETWORK_ALERTS_PER_DAY times a day per key. */
  async keyUsedFromNewNetwork(event: NewNetwork): Promise<void> {
    const today = await this.o.networks.countSince(event.keyId, new Date(event.at.getTime() - 86_400_000));
    if (today > NETWORK_ALERTS_PER_DAY) {
      this.o.logger.warn({ keyId: event.keyId, network: event.network }, 'key used from another new network today: not e-mailed (daily limit per key)');
      return;
    }
    const [key, server] = await Promise.all([this.o.keys.get(event.ownerId, event.keyId), this.o.servers.get(event.ownerId, event.serverId)]);
    if (!key) return;
    await this.alert(event.ownerId, 'key_new_network', () =>
      messages.keyNewNetwork({
        publicUrl: this.o.site.publicUrl,
        key: key.name,
        prefix: key.prefix,
        network: event.network,
        at: event.at,
        server: server?.name ?? null,
      }),
    );
  }

  private async checkCredits(ownerId: string, balance: number): Promise<void> {
    const owner = await this.o.owners.get(ownerId);
    if (!owner) return;
    const threshold = creditAlert(owner).threshold;
    const alerted = owner.credit_alerted === true;
    this.creditStates.set(ownerId, { threshold, alerted: alerted || balance < threshold });
    if (alerted || balance >= threshold || !(await this.o.owners.claimCreditAlert(ownerId))) return;
    await this.alert(
      ownerId,
      'credits_low',
      () => messages.creditsLow({ publicUrl: this.o.site.publicUrl, balance, threshold, help: this.o.site.creditsHelp }),
      owner,
    );
  }

  /** Queues an alert unless the owner turned it off; failures are logged, never thrown (alerts are best effort). */
  private async alert(ownerId: string, kind: AlertKind, content: () => Omit<MailContent, 'footer'>, known?: OwnerDoc): Promise<void> {
    try {
      const owner = known ?? (await this.o.owners.get(ownerId));
      if (!owner || owner.alerts_off?.includes(kind)) return;
      const publicUrl = this.o.site.publicUrl;
      const token = this.unsubscribeToken(ownerId, kind);
      const footer = alertFooter({ publicUrl, setting: ALERT_LABELS[kind], unsubscribeUrl: `${publicUrl}/unsubscribe?token=${token}` });
      await this.o.outbox.enqueue({
        kind: MAIL_KINDS[kind],
        ownerId,
        to: owner.email,
        ...renderMail({ ...content(), footer }),
        // RFC 8058: a mail program's "unsubscribe" POSTs List-Unsubscribe=One-Click to this URL.
        headers: { 'List-Unsubscribe': `<${publicUrl}/api/unsubscribe?token=${token}>`, 'List-Unsubscribe-Post': 'List-Unsubscribe=One-Click' },
      });
    } catch (err) {
      this.o.logger.error({ err, ownerId, kind }, 'cannot queue an e-mail alert');
    }
  }

  private sign(ownerId: string, kind: AlertKind): string {
    return createHmac('sha256', this.o.secret).update(`unsubscribe\0${ownerId}\0${kind}`).digest('base64url').slice(0, 22);
  }
}
