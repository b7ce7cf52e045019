// The call log: an owner's calls from the ledger, newest first, filtered by server, key, tool, outcome and
// time, paged with a cursor on (at, _id) (each filter has an index that gives the pages in order: runtime/indexes.ts); one call in detail with
// what its outcome meant for its credits; CSV and JSON downloads of what a filter selects. Read only: the
// ledger (runtime/billing/) writes the records.
import type Router from '@koa/router';
import type { Context } from 'koa';
import { newestFirstPage } from '../audit/audit-trail.ts';
import type { CallDoc, CallOutcome } from '../billing/ledger.ts';
import type { Collection, Filter } from '../store/port.ts';
import { type ApiDeps, type Guards, me, refuseWhenLimited } from './context.ts';
import { ApiError, notFound } from './http.ts';
import { type ListPage, listQueryReader, sendDownload } from './list-query.ts';

export const CALL_OUTCOMES: readonly CallOutcome[] = ['ok', 'tool_error', 'refunded', 'rejected'];

export interface CallQuery {
  server?: string;
  key?: string;
  /** The end user the calls acted as (eu_...). */
  endUser?: string;
  tool?: string;
  outcomes?: CallOutcome[];
  from?: Date;
  to?: Date;
}

/** The filter of a call-log query string; every problem names its parameter. */
export function callsQuery(query: Record<string, unknown>): CallQuery & ListPage {
  const read = listQueryReader(query, { maxLimit: 500, items: 'call' });
  const outcomes = read.list('outcome')?.map((o) => {
    if (!(CALL_OUTCOMES as readonly string[]).includes(o)) throw new ApiError(400, `"outcome": ${o} is not an outcome; use ${CALL_OUTCOMES.join(', ')}`);
    return o as CallOutcome;
  });
  return { ...read.page(), server: read.text('server'), key: read.text('key'), endUser: read.text('end_user'), tool: read.text('tool'), outcomes };
}

/** What a call-log query selects (each has an index that gives its pages in order: runtime/indexes.ts). */
export function callConditions(ownerId: string, q: CallQuery): Filter[] {
  // The unused rest of a credit block (count 0) is no call.
  const parts: Filter[] = [{ owner_id: ownerId }, { count: { $ne: 0 } }];
  if (q.server) parts.push({ server_id: q.server });
  if (q.key) parts.push({ key_id: q.key });
  if (q.endUser) parts.push({ end_user_id: q.endUser });
  if (q.tool) parts.push({ tool: q.tool });
  if (q.outcomes?.length) parts.push({ outcome: q.outcomes.length === 1 ? q.outcomes[0] : { $in: q.outcomes } });
  if (q.from || q.to) parts.push({ at: { ...(q.from ? { $gte: q.from } : {}), ...(q.to ? { $lte: q.to } : {}) } });
  return parts;
}

/** One page of an owner's calls, newest first; `cursor` is the previous page's next_cursor. */
export async function listCalls(
  calls: Collection<CallDoc>,
  ownerId: string,
  q: CallQuery,
  page: { limit: number; cursor?: string },
): Promise<{ calls: CallDoc[]; next_cursor: string | null }> {
  const { items, next_cursor } = await newestFirstPage(calls, callConditions(ownerId, q), page);
  return { calls: items, next_cursor };
}

/** A call as the API shows it: never the owner or the place on the credit line. */
export function publicCall(c: CallDoc) {
  return {
    id: c._id,
    at: c.at,
    server_id: c.server_id,
    key_id: c.key_id,
    tool: c.tool,
    outcome: c.outcome,
    code: c.code,
    charged: c.charged,
    credits: c.credits,
    latency_ms: c.latency_ms,
    message: c.message ?? null,
    provider_status: c.provider_status ?? null,
    via: c.via ?? null,
    // Rejections past the owner's minute's share are counted in one record (billing/rejections.ts).
    calls: c.count ?? 1,
    end_user_id: c.end_user_id ?? null,
  };
}

/** Why a refunded call got its credits back (by the error code: docs/architecture.md, "Refunds"). */
const REFUNDED: Record<string, string> = {
  interrupted: 'the service stopped during this call; which tool it was is not known',
  store_unavailable: "the service's store refused or did not answer the call's record when it ended (the provider was reached and may have acted on it)",
  network_error: 'the provider could not be reached (connection refused or reset, or its name did not resolve)',
  timeout: 'the provider did not answer in time, and the request had not fully reached it',
  rate_limited: 'the provider refused the request as one too many (HTTP 429)',
  provider_error: 'the provider failed on its side',
  cancelled: 'the client cancelled the call, or went away, before the request reached the provider',
  outbound_refused: "the outbound guard refused the provider's address (a private or special network)",
  invalid_header: 'a header value was refused before anything was sent',
  response_too_large: "the provider's answer was larger than this service accepts",
  unexpected_response: "the provider's answer did not have the shape the tool promises",
  internal_error: 'the tool failed inside this service',
  invalid_arguments: 'the tool refused the arguments before sending anything',
  sandbox_unavailable: 'the sandbox could not be started',
  account_needs_reauth: "the provider would not renew the account's connection, which now needs its owner (reconnect it)",
  sandbox_full: 'the sandbox accounts took in as much data as they may until they start again from their seed',
  n8n_wrong_path: "n8n's public API is not at the account's URL",
  n8n_api_disabled: "n8n's public API is turned off",
  n8n_unreachable_api: "no n8n answered at the account's URL",
};

/** Why a call that failed kept its credits. */
const KEPT: Record<string, string> = {
  partially_applied: 'part of the change was applied before the failure',
  account_required: 'the tool needs an account and none is bound to it (nothing was sent)',
  invalid_arguments: 'a value the request needs was missing or not usable (nothing was sent)',
  cancelled: 'the client cancelled after the request reached the provider, which may have acted on it',
  timeout: 'the request reached the provider, which may have acted on it, but no answer came in time (whoever set the timeout)',
  network_error: 'the connection broke after the request reached the provider, which may have acted on it',
  response_too_large: 'the provider answered the request, with more than this service accepts',
};

/** Why a call was refused before any charge. */
const REJECTED: Record<string, string> = {
  invalid_arguments: "the arguments did not fit the tool's parameters, or set a parameter this server locks",
  insufficient_credits: 'the balance was lower than what the tool costs',
  tool_not_allowed: "the key's (or app's) restrictions do not allow this tool",
  budget_exceeded: "the key's (or app's) budget for the period was spent",
  account_missing: 'the account bound to the tool had been deleted',
  account_needs_reauth: 'the account bound to the tool needs its owner (reconnect it)',
  sandbox_unavailable: 'the sandbox could not be started',
  rejections_counted: 'more calls were refused in that minute than are logged one by one; this record counts them',
};

/** What a call's outcome meant for its credits, in words. */
export function callExplanation(c: Pick<CallDoc, 'outcome' | 'code' | 'charged' | 'credits' | 'provider_status'>): string {
  const credits = (n: number) => `${n} credit${n === 1 ? '' : 's'}`;
  const status = c.provider_status ? ` (HTTP ${c.provider_status})` : '';
  switch (c.outcome) {
    case 'ok':
      return c.charged ? `The tool answered; its ${credits(c.charged)} were kept.` : 'The tool answered. It is free: nothing was charged.';
    case 'rejected':
      return `Refused before any charge: ${REJECTED[c.code] ?? 'the call was refused'}. No credits were taken and no provider was called.`;
    case 'refunded':
      return `Refunded: ${REFUNDED[c.code] ?? 'the failure was not the caller’s'}${status}. The ${credits(c.charged)} charged at the start were given back.`;
    case 'tool_error': {
      const why =
        KEPT[c.code] ??
        (c.provider_status
          ? `the provider answered the request with an error${status}; a request that reached the provider is paid for`
          : 'the tool failed in a way that is paid for');
      return `Kept: ${why}. ${credits(c.credits)} charged.`;
    }
  }
}

const CSV_COLUMNS = [
  'at',
  'id',
  'server_id',
  'server_name',
  'key_id',
  'key_name',
  'tool',
  'outcome',
  'code',
  'charged',
  'credits',
  'latency_ms',
  'provider_status',
  'message',
  'via',
  'calls',
  'end_user_id',
];

/** Names of an owner's servers and credentials (keys, connected apps), for lists a person reads. */
export async function callNames(d: ApiDeps, ownerId: string): Promise<{ servers: Map<string, string>; keys: Map<string, string> }> {
  const servers = await d.servers.list(ownerId);
  const [globals, serverKeys, grants] = await Promise.all([
    d.keys.listGlobal(ownerId),
    Promise.all(servers.map((s) => d.keys.listForServer(ownerId, s._id))),
    d.oauth.grants.list(ownerId),
  ]);
  const keys = new Map<string, string>([['dashboard', 'Dashboard (you)']]);
  for (const k of [...globals, ...serverKeys.flat()]) keys.set(k._id, k.name);
  for (const g of grants) keys.set(g._id, `${g.client_name} (app)`);
  return { servers: new Map(servers.map((s) => [s._id, s.name])), keys };
}

export function callsRoutes(router: Router, d: ApiDeps, g: Guards): void {
  router.get('/calls', g.owner, async (ctx: Context) => {
    const ownerId = me(ctx)._id;
    const q = callsQuery(ctx.query);
    if (q.format) {
      refuseWhenLimited(ctx, await d.ownerLimits.export(ownerId));
      const names = q.format === 'csv' ? await callNames(d, ownerId) : undefined;
      sendDownload(ctx, q.format, {
        name: 'calls',
        read: async (page) => {
          const { calls, next_cursor } = await listCalls(d.ledger.calls, ownerId, q, page);
          return { items: calls, next_cursor };
        },
        json: { field: 'calls', item: publicCall },
        csv: {
          columns: CSV_COLUMNS,
          row: (c) => [
            c.at,
            c._id,
            c.server_id,
            names?.servers.get(c.server_id),
            c.key_id,
            names?.keys.get(c.key_id),
            c.tool,
            c.outcome,
            c.code,
            c.charged,
            c.credits,
            c.latency_ms,
            c.provider_status,
            c.message,
            c.via,
            c.count ?? 1,
            c.end_user_id,
          ],
        },
      });
      return;
    }
    const page = await listCalls(d.ledger.calls, ownerId, q, { limit: q.limit, cursor: q.cursor });
    ctx.body = { calls: page.calls.map(publicCall), next_cursor: page.next_cursor };
  });
  router.get('/calls/:id', g.owner, async (ctx) => {
    const call = await d.ledger.calls.findOne({ _id: ctx.params.id, owner_id: me(ctx)._id });
    if (!call) throw notFound('Call');
    ctx.body = { ...publicCall(call), explanation: callExplanation(call) };
  });
}
