// State-change webhooks: an owner may give a URL that is told, by a signed POST, whenever one of their accounts
// changes health (connected, needs_reauth, unreachable), so that their own systems react before an agent fails.
//
// Each event is a delivery in the store, sent at once and retried with backoff until the receiver answers 2xx
// (or the attempts run out), through the one outbound client and its guard. The body is signed with the
// webhook's secret (HMAC-SHA256 of the raw body, `X-Toolserver-Signature-256: sha256=<hex>`); the secret is
// shown once when the webhook is set, and kept encrypted like account secrets.
import { createHmac } from 'node:crypto';
import type { HttpClient } from '../http/client.ts';
import type { Logger } from '../log.ts';
import { randomId, randomToken } from '../secrets.ts';
import type { StoreClock } from '../store/clock.ts';
import type { Collection, Doc, Store } from '../store/port.ts';
import { ToolError } from '../tool-error.ts';
import type { AccountDoc, AccountState, Sealed, Vault } from './accounts.ts';

export const SIGNATURE_HEADER = 'X-Toolserver-Signature-256';
export const EVENT_HEADER = 'X-Toolserver-Event';
export const DELIVERY_HEADER = 'X-Toolserver-Delivery';

/** Waits before each retry: the n-th retry waits BACKOFF_MS[n - 1]; after the last, the delivery is given up. */
export const BACKOFF_MS = [10_000, 60_000, 5 * 60_000, 30 * 60_000, 2 * 3_600_000, 6 * 3_600_000];
const SEND_TIMEOUT_MS = 10_000;
/** A delivery being sent is not picked again for this long (another instance, or the next round). */
const CLAIM_MS = 60_000;
/** Delivered and given-up deliveries are kept this long (the owner's page lists the latest). */
export const KEEP_MS = 7 * 86_400_000;

interface WebhookDoc extends Doc {
  /** _id is the owner id. */
  url: string;
  secret: Sealed;
  created_at: Date;
}

export interface DeliveryDoc extends Doc {
  owner_id: string;
  url: string;
  event: string;
  /** The exact bytes signed and sent. */
  body: string;
  created_at: Date;
  attempts: number;
  next_at: Date | null;
  delivered_at: Date | null;
  /** What the last attempt came to, in words (a status, a network error). */
  last_result: string | null;
  given_up: boolean;
}

export interface WebhookView {
  url: string;
  created_at: Date;
}

const secretAad = (ownerId: string) => `webhook\0${ownerId}`;

/** The signature header's value for a body (receivers compute the same and compare in constant time). */
export const signature = (secret: string, body: string) => `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`;

export class StateWebhooks {
  private readonly webhooks: Collection<WebhookDoc>;
  private readonly deliveries: Collection<DeliveryDoc>;
  private readonly clock: StoreClock;

  constructor(
    store: Store,
    private readonly vault: Vault,
    private readonly http: HttpClient,
    private readonly logger: Logger,
  ) {
    this.clock = store.clock;
    this.webhooks = store.collection<WebhookDoc>('webhooks');
    this.deliveries = store.collection<DeliveryDoc>('webhook_deliveries');
  }

  async get(ownerId: string): Promise<WebhookView | null> {
    const doc = await this.webhooks.findOne({ _id: ownerId });
    return doc && { url: doc.url, created_at: doc.created_at };
  }

  /** Sets the owner's webhook with a new secret, returned this once. */
  async set(ownerId: string, url: string): Promise<{ webhook: WebhookView; secret: string }> {
    const secret = randomToken('whsec_');
    const created_at = this.clock.date();
    await this.webhooks.updateOne({ _id: ownerId }, { $set: { url, secret: this.vault.seal({ secret }, secretAad(ownerId)), created_at } }, { upsert: true });
    return { webhook: { url, created_at }, secret };
  }

  async remove(ownerId: string): Promise<boolean> {
    return (await this.webhooks.deleteOne({ _id: ownerId })) > 0;
  }

  /** The owner's latest deliveries, newest first. */
  latest(ownerId: string, limit = 10): Promise<DeliveryDoc[]> {
    return this.deliveries.find({ owner_id: ownerId }, { sort: { created_at: -1 }, limit });
  }

  /** An account's health changed: its owner's webhook (if any) is told. */
  async accountStateChanged(account: AccountDoc, previous: AccountState, state: AccountState, reason: string | null, reconnectUrl: string): Promise<void> {
    await this.enqueue(account.owner_id, 'account.state_changed', {
      account: { id: account._id, name: account.name, kind: account.kind, auth: account.auth ?? 'token' },
      // An end user's account: the owner's systems know whom to send a connect link.
      ...(account.end_user_id ? { end_user_id: account.end_user_id } : {}),
      previous_state: previous,
      state,
      state_reason: reason,
      checked_at: this.clock.date(),
      ...(state === 'needs_reauth' ? { reconnect_url: reconnectUrl } : {}),
    });
  }

  /** A test event, so an owner can check their receiver. */
  ping(ownerId: string): Promise<DeliveryDoc | null> {
    return this.enqueue(ownerId, 'ping', { message: 'This is a test event of your Tool Server webhook.' });
  }

  private async enqueue(ownerId: string, event: string, data: Record<string, unknown>): Promise<DeliveryDoc | null> {
    const webhook = await this.webhooks.findOne({ _id: ownerId });
    if (!webhook) return null;
    const id = randomId('evt_');
    const now = this.clock.date();
    const body = JSON.stringify({ id, type: event, created_at: now, data });
    const doc: DeliveryDoc = {
      _id: id,
      owner_id: ownerId,
      url: webhook.url,
      event,
      body,
      created_at: now,
      attempts: 0,
      next_at: new Date(now.getTime() + CLAIM_MS),
      delivered_at: null,
      last_result: null,
      given_up: false,
    };
    try {
      await this.deliveries.insertOne(doc);
    } catch (err) {
      // The event is lost, not the change it reports.
      this.logger.error({ err, ownerId, event }, 'webhook event not queued');
      return null;
    }
    // The first attempt now, in the background; the retries come from deliverDue.
    void this.attempt(doc).catch((err) => this.logger.error({ err, deliveryId: id }, 'webhook delivery failed'));
    return doc;
  }

  /** Sends every delivery whose time has come (run every few seconds by the service); how many were sent. */
  async deliverDue(now = this.clock.date()): Promise<number> {
    const due = await this.deliveries.find({ next_at: { $lte: now } }, { sort: { next_at: 1 }, limit: 20 });
    let sent = 0;
    for (const doc of due) {
      // Claimed by moving its time on: another instance that read it too finds it taken.
      const claimed = await this.deliveries.findOneAndUpdate({ _id: doc._id, next_at: doc.next_at }, { $set: { next_at: new Date(now.getTime() + CLAIM_MS) } });
      if (!claimed) continue;
      await this.attempt(claimed, now);
      sent++;
    }
    return sent;
  }

  /** Deletes deliveries delivered or given up more than KEEP_MS ago (with the service's hourly sweeps); how many. */
  sweep(now = this.clock.date()): Promise<number> {
    return this.deliveries.deleteMany({ next_at: null, created_at: { $lt: new Date(now.getTime() - KEEP_MS) } });
  }

  private async attempt(doc: DeliveryDoc, now = this.clock.date()): Promise<void> {
    const webhook = await this.webhooks.findOne({ _id: doc.owner_id });
    let result: string;
    let delivered = false;
    if (!webhook || webhook.url !== doc.url) result = 'not sent: the webhook was changed or removed';
    else {
      const secret = this.vault.open(webhook.secret, secretAad(doc.owner_id)).secret;
      try {
        const res = await this.http.send({
          method: 'POST',
          url: new URL(doc.url),
          headers: {
            'content-type': 'application/json',
            'user-agent': 'tool-server-webhooks',
            [SIGNATURE_HEADER]: signature(secret, doc.body),
            [EVENT_HEADER]: doc.event,
            [DELIVERY_HEADER]: doc._id,
          },
          body: doc.body,
          timeoutMs: SEND_TIMEOUT_MS,
          retry: false,
          followRedirects: false,
        });
        delivered = res.status >= 200 && res.status < 300;
        result = `HTTP ${res.status}`;
      } catch (err) {
        if (!(err instanceof ToolError)) throw err;
        result = err.message;
      }
    }
    const attempts = doc.attempts + 1;
    const stop = delivered || !webhook || webhook.url !== doc.url || attempts > BACKOFF_MS.length;
    await this.deliveries.updateOne(
      { _id: doc._id },
      {
        $set: {
          attempts,
          last_result: result,
          delivered_at: delivered ? now : null,
          given_up: stop && !delivered,
          next_at: stop ? null : new Date(now.getTime() + BACKOFF_MS[attempts - 1]),
        },
      },
    );
    if (!delivered) this.logger.warn({ deliveryId: doc._id, ownerId: doc.owner_id, attempts, result }, 'webhook not delivered');
  }
}
