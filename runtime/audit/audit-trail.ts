// The audit trail: one event per management change and sign-in event (time, actor, action, target, client
// address, user agent, what changed), newest first, kept AUDIT_RETENTION_DAYS and, per owner, at most the newest
// AUDIT_MAX_EVENTS_PER_OWNER (events of nobody signed in, such as strangers' failed sign-ins, a tenth of that
// on their own, so that they can never push out what the owner did). Never a secret: what changed is scrubbed
// of any secret-looking field and of anything shaped like one of this service's tokens.
import type { Logger } from '../log.ts';
import { randomId } from '../secrets.ts';
import type { StoreClock } from '../store/clock.ts';
import type { Collection, Doc, Filter, Store } from '../store/port.ts';
import type { Actor, RequestInfo } from './request-context.ts';

export const AUDIT_ACTIONS = [
  'signin.ok',
  'signin.fail',
  'signout',
  'session.revoke_all',
  'password.change',
  'password.reset',
  'email.verify',
  'invitation.accept',
  'owner.create',
  'owner.update',
  'token.create',
  'token.revoke',
  'credits.grant',
  'server.create',
  'server.update',
  'server.delete',
  'tool.create',
  'tool.update',
  'tool.delete',
  'account.create',
  'account.update',
  'account.verify',
  'account.delete',
  'account.connect',
  'account.reconnect',
  'account.connect_fail',
  'account.state',
  'key.create',
  'key.update',
  'key.revoke',
  'key.revoke_all',
  'key.link',
  'key.unlink',
  'grant.approve',
  'grant.deny',
  'grant.update',
  'grant.revoke',
  'webhook.update',
  'webhook.delete',
  'oauth_app.update',
  'oauth_app.delete',
  'end_user.create',
  'end_user.update',
  'end_user.delete',
  'connect_session.create',
] as const;

export type AuditAction = (typeof AUDIT_ACTIONS)[number];

/** `key` stands for every key.* action, and so on. */
export const AUDIT_FAMILIES = [...new Set(AUDIT_ACTIONS.map((a) => a.split('.')[0]))];

export interface AuditTarget {
  type: string;
  id: string;
  name?: string;
}

export interface AuditEvent {
  action: AuditAction;
  /** Whose account the event concerns (they see it); null when nobody's (a sign-in with an unknown e-mail). */
  owner_id: string | null;
  target?: AuditTarget | null;
  changes?: Record<string, unknown>;
  /** Defaults to the request's actor. */
  actor?: Actor;
}

export interface AuditDoc extends Doc {
  at: Date;
  owner_id: string | null;
  actor: Actor;
  action: AuditAction;
  target: AuditTarget | null;
  ip: string | null;
  user_agent: string | null;
  changes: Record<string, unknown> | null;
}

export interface AuditQuery {
  /** undefined: every owner's events (the operator). */
  ownerId?: string;
  from?: Date;
  to?: Date;
  actions?: string[];
}

const SECRET_FIELD = /pass(word)?|secret|token|hash|credential|authorization|cookie|^key$|api_?key|private/i;
/** This service's own credentials (keys, management, operator, OAuth tokens, codes, client secrets). */
const OUR_TOKENS = /mcp(k|o|op|at|rt|ac|cs)_[A-Za-z0-9]{8,}/g;
const MAX_CHANGES_CHARS = 4000;

/** What changed, without secrets: secret-looking fields say only that they changed; token-shaped text is masked. */
export function scrub(value: unknown, depth = 0): unknown {
  if (typeof value === 'string') return value.slice(0, 300).replace(OUR_TOKENS, (t) => `${t.slice(0, t.indexOf('_') + 1)}[redacted]`);
  if (value === null || typeof value !== 'object' || value instanceof Date) return value;
  if (depth > 6) return '[nested]';
  if (Array.isArray(value)) return value.slice(0, 100).map((v) => scrub(v, depth + 1));
  return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, SECRET_FIELD.test(k) ? '[redacted]' : scrub(v, depth + 1)]));
}

/** An owner's events (or nobody's: owner_id null) done by someone signed in, or by nobody signed in (strangers). */
interface EventGroup {
  ownerId: string | null;
  strangers: boolean;
}

export class AuditTrail {
  private readonly events: Collection<AuditDoc>;
  private readonly clock: StoreClock;
  /**
   * The groups this instance recorded events of since the last housekeeping: how many since the group's last
   * trim, and that trim (one at a time per group).
   */
  private readonly recorded = new Map<string, { group: EventGroup; count: number; trimming: Promise<number> }>();

  constructor(
    store: Store,
    private readonly logger: Logger,
    /** Events kept per owner, newest first; a tenth of it for the events of nobody signed in. */
    private readonly maxPerOwner = Infinity,
  ) {
    this.events = store.collection<AuditDoc>('audit_events');
    this.clock = store.clock;
  }

  /**
   * Records an event with the address, user agent and actor of the request that caused it (none for the
   * service's own doings). A failure to write is logged, never thrown: the change it describes is already
   * made, and its caller must learn that it was.
   */
  async record(request: RequestInfo | undefined, event: AuditEvent): Promise<void> {
    // A field set to nothing (no expiry, no budget...) says nothing: only what was set or changed is kept.
    const given = event.changes && Object.fromEntries(Object.entries(event.changes).filter(([, v]) => v !== null && v !== undefined));
    let changes = given && Object.keys(given).length ? (scrub(given) as Record<string, unknown>) : null;
    if (changes && JSON.stringify(changes).length > MAX_CHANGES_CHARS) changes = { truncated: true, fields: Object.keys(changes) };
    const doc: AuditDoc = {
      _id: randomId('aud_'),
      // The store's time: events of every instance in one order, kept for AUDIT_RETENTION_DAYS by that same clock.
      at: this.clock.date(),
      owner_id: event.owner_id,
      actor: event.actor ?? request?.actor ?? { type: 'anonymous' },
      action: event.action,
      target: event.target ? (scrub(event.target) as AuditTarget) : null,
      ip: request?.ip ?? null,
      user_agent: request?.userAgent || null,
      changes,
    };
    try {
      await this.events.insertOne(doc);
    } catch (err) {
      this.logger.error({ err, action: event.action, owner: event.owner_id }, 'audit event not recorded');
      return;
    }
    this.counted({ ownerId: doc.owner_id, strangers: doc.actor.type === 'anonymous' });
  }

  /**
   * Keeps each group within its limit: trimmed as soon as a tenth of its limit was recorded since its last
   * trim (in the background), and by the hourly housekeeping (`trim`), so a group holds at most its limit and a
   * tenth.
   */
  private counted(group: EventGroup): void {
    if (this.maxPerOwner === Infinity) return;
    const slot = `${group.ownerId}\0${group.strangers}`;
    const entry = this.recorded.get(slot) ?? { group, count: 0, trimming: Promise.resolve(0) };
    this.recorded.set(slot, entry);
    if (++entry.count < Math.ceil(this.limitOf(group) / 10)) return;
    entry.count = 0;
    this.trimmed(entry).catch((err) => this.logger.error({ err, owner: group.ownerId }, 'audit trail not trimmed'));
  }

  /** Trims every group recorded since the last housekeeping to its newest events; how many events were deleted. */
  async trim(): Promise<number> {
    const entries = [...this.recorded.values()];
    this.recorded.clear();
    let deleted = 0;
    for (const entry of entries) deleted += await this.trimmed(entry);
    return deleted;
  }

  /** Trims a group after its trim under way, if any: two at once could each keep what the other deletes around. */
  private trimmed(entry: { group: EventGroup; trimming: Promise<number> }): Promise<number> {
    entry.trimming = entry.trimming.catch(() => 0).then(() => this.trimGroup(entry.group));
    return entry.trimming;
  }

  private limitOf(group: EventGroup): number {
    return group.strangers ? Math.max(1, Math.floor(this.maxPerOwner / 10)) : this.maxPerOwner;
  }

  private async trimGroup(group: EventGroup): Promise<number> {
    const filter: Filter = { owner_id: group.ownerId, 'actor.type': group.strangers ? 'anonymous' : { $ne: 'anonymous' } };
    const [oldestKept] = await this.events.find(filter, { sort: { at: -1, _id: -1 }, skip: this.limitOf(group) - 1, limit: 1 });
    if (!oldestKept) return 0;
    return this.events.deleteMany({ $and: [filter, { $or: [{ at: { $lt: oldestKept.at } }, { at: oldestKept.at, _id: { $lt: oldestKept._id } }] }] });
  }

  /** One page, newest first; `cursor` is the previous page's next_cursor. */
  async list(q: AuditQuery, page: { limit: number; cursor?: string }): Promise<{ events: AuditDoc[]; next_cursor: string | null }> {
    const { items, next_cursor } = await newestFirstPage(this.events, auditConditions(q), page);
    return { events: items, next_cursor };
  }

  /** Deletes events older than the retention. */
  sweep(before: Date): Promise<number> {
    return this.events.deleteMany({ at: { $lt: before } });
  }
}

/** What a query of the audit trail selects (each has an index that gives its pages in order: runtime/indexes.ts). */
export function auditConditions(q: AuditQuery): Filter[] {
  const parts: Filter[] = [];
  if (q.ownerId !== undefined) parts.push({ owner_id: q.ownerId });
  if (q.actions?.length) parts.push({ action: q.actions.length === 1 ? q.actions[0] : { $in: q.actions } });
  if (q.from || q.to) parts.push({ at: { ...(q.from ? { $gte: q.from } : {}), ...(q.to ? { $lte: q.to } : {}) } });
  return parts;
}

export class CursorError extends Error {}

/** The order of the call log and the audit trail: newest first, `_id` ordering what shares a millisecond (a batch of records). */
export const NEWEST_FIRST = { at: -1, _id: -1 } as const;

/**
 * The filter of a page newest first: the conditions, and after `cursor` only what comes after it, with `at`
 * bounded so that an index on (..., at, _id) starts the page at the cursor instead of walking every newer entry.
 */
export function newestFirstFilter(conditions: Filter[], cursor?: string): Filter {
  const parts = [...conditions];
  if (cursor) {
    const c = decodeCursor(cursor);
    parts.push({ at: { $lte: c.at } }, { $or: [{ at: { $lt: c.at } }, { at: c.at, _id: { $lt: c.id } }] });
  }
  return parts.length === 0 ? {} : parts.length === 1 ? parts[0]! : { $and: parts };
}

/** One page of a list newest first (the audit trail, the call log), and the cursor of the next one. */
export async function newestFirstPage<T extends Doc & { at: Date }>(
  collection: Collection<T>,
  conditions: Filter[],
  page: { limit: number; cursor?: string },
): Promise<{ items: T[]; next_cursor: string | null }> {
  const docs = await collection.find(newestFirstFilter(conditions, page.cursor), { sort: NEWEST_FIRST, limit: page.limit + 1 });
  const items = docs.slice(0, page.limit);
  const last = items.at(-1);
  return { items, next_cursor: docs.length > page.limit && last ? encodeCursor(last) : null };
}

/** A cursor of a list sorted newest first on (at, _id): where the next page starts. The call log uses it too. */
export const encodeCursor = (doc: { at: Date; _id: string }) => Buffer.from(JSON.stringify({ at: doc.at.toISOString(), id: doc._id })).toString('base64url');

export function decodeCursor(cursor: string): { at: Date; id: string } {
  try {
    const { at, id } = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as { at: unknown; id: unknown };
    const date = new Date(String(at));
    if (typeof id === 'string' && !Number.isNaN(date.getTime())) return { at: date, id };
  } catch {
    // reported below
  }
  throw new CursorError('"cursor" is not a cursor of this list: use the next_cursor of the previous page');
}

/** The JSON view of an event (the API and the JSON export). */
export function publicEvent(e: AuditDoc) {
  return {
    id: e._id,
    at: e.at,
    owner_id: e.owner_id,
    actor: e.actor,
    action: e.action,
    target: e.target,
    ip: e.ip,
    user_agent: e.user_agent,
    changes: e.changes,
  };
}

/** The columns of the audit trail's CSV download, one row per event (auditCsvRow). */
export const AUDIT_CSV_COLUMNS = [
  'at',
  'owner_id',
  'actor_type',
  'actor_id',
  'actor_name',
  'action',
  'target_type',
  'target_id',
  'target_name',
  'ip',
  'user_agent',
  'changes',
];

export const auditCsvRow = (e: AuditDoc): unknown[] => [
  e.at,
  e.owner_id,
  e.actor.type,
  e.actor.id,
  e.actor.name,
  e.action,
  e.target?.type,
  e.target?.id,
  e.target?.name,
  e.ip,
  e.user_agent,
  e.changes,
];

/**
 * A cell a spreadsheet would run as a formula: one starting with = + - @ (or their full-width forms), also after
 * leading whitespace or invisible format characters (a spreadsheet may skip those), or with a tab or CR.
 */
const FORMULA = /^[\s\p{Cf}]*[=+\-@\uFF1D\uFF0B\uFF0D\uFF20]|^[\t\r]/u;
/** Quoted whenever it holds a separator some spreadsheet splits on (the comma, and the semicolon of many locales). */
const NEEDS_QUOTES = /[",;\t\r\n]/;

/** One RFC 4180 line (ending in CRLF); a cell a spreadsheet would run as a formula is prefixed with a quote. */
export function csvLine(cells: unknown[]): string {
  const cell = (v: unknown) => {
    let text = v === null || v === undefined ? '' : v instanceof Date ? v.toISOString() : typeof v === 'string' ? v : JSON.stringify(v);
    if (FORMULA.test(text)) text = `'${text}`;
    return NEEDS_QUOTES.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
  };
  return cells.map(cell).join(',') + '\r\n';
}
