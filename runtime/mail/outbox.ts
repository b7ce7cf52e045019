// The mail outbox: every message is a document in the store first, and leaves through SMTP off the request
// path. A request only inserts (a few milliseconds, whatever the SMTP server does); each instance's sender
// claims due messages one at a time (a guarded update: one claimant, on one store or across instances), sends
// and marks them. An attempt that fails waits (MAIL_RETRY_SECONDS, then four times longer each time, at most
// two hours) and is tried again up to MAIL_ATTEMPTS times; a refusal for good (SMTP 5xx), the last attempt or
// an expired link gives the message up: logged without its content, counted in the metrics, kept (without
// content) for the operator's list.
//
// Messages carry single-use links: their content is sealed in the store (AES-256-GCM under the master key)
// and dropped once sent or given up. A claim outlasts the longest attempt, so a message is sent once; only a
// crash between the SMTP server's acceptance and the mark can send it again (its Message-ID is the same).
import type { Sealed, Vault } from '../accounts/accounts.ts';
import type { Logger } from '../log.ts';
import { randomId } from '../secrets.ts';
import type { StoreClock } from '../store/clock.ts';
import type { Collection, Doc, Store } from '../store/port.ts';
import { MAX_SEND_MS, type MailTransport, sendFailure } from './transport.ts';
import type { RenderedMail } from './messages.ts';

/** What a message is about: its metrics label, and its unsubscribe setting for alerts. */
export type MailKind = 'verify_address' | 'password_reset' | 'alert_credits' | 'alert_account' | 'alert_network';

export interface OutboxDoc extends Doc {
  kind: MailKind;
  owner_id: string | null;
  state: 'queued' | 'sent' | 'failed';
  /** The recipient and the message (links in it are secrets); absent once sent or given up. */
  sealed?: Sealed;
  created_at: Date;
  /** Not worth sending after this (its link has expired). */
  expires_at: Date | null;
  attempts: number;
  /** Due from this time. */
  next_at: Date;
  /** Claimed by `claimed_by` until this time (an attempt in progress); in the past when free. */
  claimed_until: Date;
  claimed_by: string | null;
  last_error: string | null;
  /** When it was sent or given up (kept a week for the operator's view, then deleted). */
  done_at: Date | null;
}

export interface OutboxMetrics {
  sent(kind: MailKind): void;
  failedAttempt(kind: MailKind): void;
  givenUp(kind: MailKind): void;
}

export interface NewMail extends RenderedMail {
  kind: MailKind;
  ownerId: string | null;
  to: string;
  headers?: Record<string, string>;
  expiresAt?: Date;
}

/** The operator's view of a message: never its content or recipient. */
export interface OutboxEntry {
  id: string;
  kind: MailKind;
  owner_id: string | null;
  state: OutboxDoc['state'];
  created_at: Date;
  attempts: number;
  next_at: Date | null;
  last_error: string | null;
  done_at: Date | null;
}

/** A claim outlasts any attempt by a minute: the message is not sent twice while an attempt may still succeed. */
const CLAIM_MS = MAX_SEND_MS + 60_000;
/** Due messages of other instances and retries are looked for this often (own new messages are sent at once). */
const POLL_MS = 5000;
const MAX_WAIT_MS = 2 * 3_600_000;
const KEEP_DONE_MS = 7 * 86_400_000;
/** Messages sent at once by one instance. */
const SENDERS = 2;
const NEVER = new Date(0);

const sealAad = (id: string) => `mail\0${id}`;

export class Outbox {
  private readonly docs: Collection<OutboxDoc>;
  private draining: Promise<void> | null = null;
  private again = false;
  private timer: NodeJS.Timeout | undefined;
  /** Retries due before the next poll, each woken on time. */
  private readonly wakeups = new Set<NodeJS.Timeout>();
  private closed = false;

  private readonly clock: StoreClock;

  constructor(
    store: Store,
    private readonly o: {
      transport: MailTransport;
      vault: Vault;
      logger: Logger;
      metrics: OutboxMetrics;
      /** Who claims (host:pid:random), so that only the claimant marks a message. */
      instance: string;
      retryMs: number;
      attempts: number;
    },
  ) {
    this.docs = store.collection<OutboxDoc>('mail_outbox');
    // Due times, claims and expiries in the store's time: instances on several hosts agree on what is due.
    this.clock = store.clock;
  }

  /** Queues a message and has it sent now (off the caller's path). Returns its id. */
  async enqueue(mail: NewMail): Promise<string> {
    const id = randomId('mail_');
    const now = this.clock.date();
    const content = { to: mail.to, subject: mail.subject, text: mail.text, html: mail.html, headers: JSON.stringify(mail.headers ?? {}) };
    await this.docs.insertOne({
      _id: id,
      kind: mail.kind,
      owner_id: mail.ownerId,
      state: 'queued',
      sealed: this.o.vault.seal(content, sealAad(id)),
      created_at: now,
      expires_at: mail.expiresAt ?? null,
      attempts: 0,
      next_at: now,
      claimed_until: NEVER,
      claimed_by: null,
      last_error: null,
      done_at: null,
    });
    this.kick();
    return id;
  }

  /** Starts polling for due messages (retries, other instances' messages, claims a crash left). */
  start(): void {
    this.timer = setInterval(() => this.kick(), POLL_MS);
    this.timer.unref();
    this.kick();
  }

  /** Stops polling and waits for the attempts under way (each bounded by the transport's timeouts). */
  async close(): Promise<void> {
    this.closed = true;
    clearInterval(this.timer);
    for (const wakeup of this.wakeups) clearTimeout(wakeup);
    await this.draining;
    this.o.transport.close();
  }

  /** Sends every due message now; resolves when none is left (tests, and the poll). */
  kick(): Promise<void> {
    if (this.closed) return Promise.resolve();
    if (this.draining) {
      this.again = true;
      return this.draining;
    }
    this.draining = (async () => {
      do {
        this.again = false;
        await Promise.all(Array.from({ length: SENDERS }, () => this.sendDue()));
      } while (this.again && !this.closed);
    })()
      .catch((err) => this.o.logger.error({ err }, 'mail outbox failed'))
      .finally(() => (this.draining = null));
    return this.draining;
  }

  /** How many messages wait to be sent (a metric). */
  queued(): Promise<number> {
    return this.docs.countDocuments({ state: 'queued' });
  }

  /** The latest messages for the operator, newest first; `state` narrows them. */
  async list(state?: OutboxDoc['state'], limit = 100): Promise<OutboxEntry[]> {
    const docs = await this.docs.find(state ? { state } : {}, { sort: { created_at: -1 }, limit });
    return docs.map((d) => ({
      id: d._id,
      kind: d.kind,
      owner_id: d.owner_id,
      state: d.state,
      created_at: d.created_at,
      attempts: d.attempts,
      next_at: d.state === 'queued' ? d.next_at : null,
      last_error: d.last_error,
      done_at: d.done_at,
    }));
  }

  /** Deletes what was sent or given up more than a week ago. */
  sweep(): Promise<number> {
    return this.docs.deleteMany({ state: { $in: ['sent', 'failed'] }, done_at: { $lt: new Date(this.clock.now() - KEEP_DONE_MS) } });
  }

  private async sendDue(): Promise<void> {
    while (!this.closed) {
      const now = this.clock.date();
      const doc = await this.docs.findOneAndUpdate(
        { state: 'queued', next_at: { $lte: now }, claimed_until: { $lte: now } },
        { $set: { claimed_until: new Date(now.getTime() + CLAIM_MS), claimed_by: this.o.instance } },
      );
      if (!doc) return;
      await this.attempt(doc);
    }
  }

  private async attempt(doc: OutboxDoc): Promise<void> {
    const mine = { _id: doc._id, claimed_by: this.o.instance, state: 'queued' };
    if (!doc.sealed || (doc.expires_at && doc.expires_at <= this.clock.date())) return this.giveUp(doc, doc.attempts, 'expired before it could be sent');
    const m = this.o.vault.open(doc.sealed, sealAad(doc._id));
    try {
      await this.o.transport.send({ id: doc._id, to: m.to, subject: m.subject, text: m.text, html: m.html, headers: JSON.parse(m.headers) });
    } catch (err) {
      const failure = sendFailure(err);
      const attempts = doc.attempts + 1;
      this.o.metrics.failedAttempt(doc.kind);
      if (failure.permanent || attempts >= this.o.attempts) return this.giveUp(doc, attempts, failure.reason);
      const waitMs = Math.min(MAX_WAIT_MS, this.o.retryMs * 4 ** (attempts - 1)) * (1 + Math.random() * 0.1);
      await this.docs.updateOne(mine, {
        $set: { attempts, last_error: failure.reason, next_at: new Date(this.clock.now() + waitMs), claimed_until: NEVER, claimed_by: null },
      });
      this.o.logger.warn(
        { mailId: doc._id, kind: doc.kind, ownerId: doc.owner_id, attempts, retryInSeconds: Math.round(waitMs / 1000), reason: failure.reason },
        'mail not sent yet: will try again',
      );
      this.wakeIn(waitMs);
      return;
    }
    const now = this.clock.date();
    await this.docs.updateOne(mine, { $set: { state: 'sent', attempts: doc.attempts + 1, done_at: now, last_error: null }, $unset: { sealed: '' } });
    this.o.metrics.sent(doc.kind);
  }

  /** A retry due before the next poll is tried when due, not up to a poll later. */
  private wakeIn(ms: number): void {
    if (ms >= POLL_MS || this.closed) return;
    const wakeup = setTimeout(() => {
      this.wakeups.delete(wakeup);
      void this.kick();
    }, ms);
    wakeup.unref();
    this.wakeups.add(wakeup);
  }

  private async giveUp(doc: OutboxDoc, attempts: number, reason: string): Promise<void> {
    await this.docs.updateOne(
      { _id: doc._id, claimed_by: this.o.instance, state: 'queued' },
      { $set: { state: 'failed', attempts, last_error: reason, done_at: this.clock.date() }, $unset: { sealed: '' } },
    );
    this.o.metrics.givenUp(doc.kind);
    this.o.logger.error({ mailId: doc._id, kind: doc.kind, ownerId: doc.owner_id, attempts, reason }, 'mail given up: it could not be delivered');
  }
}
