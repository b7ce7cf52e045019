// The Calls page (the owner's call log: filters, paging, CSV export) and a call's own page. The filters are read
// by the same function as GET /api/calls, so the page and the API accept and refuse the same things.
import { type CallQuery, CALL_OUTCOMES, callExplanation, callNames, callsQuery, listCalls } from '../api/calls.ts';
import type { ApiDeps } from '../api/context.ts';
import { ApiError } from '../api/http.ts';
import { CursorError } from '../audit/audit-trail.ts';
import type { CallDoc } from '../billing/ledger.ts';

const PAGE_SIZE = 50;
const DAY = /^\d{4}-\d{2}-\d{2}$/;

const OUTCOME_NAMES: Record<string, string> = { ok: 'ok', tool_error: 'error (kept)', refunded: 'refunded', rejected: 'rejected (not charged)' };

type Names = Awaited<ReturnType<typeof callNames>>;

/** A call as the pages show it: names instead of ids, and what a call with no tool (interrupted) was. */
export function callRow(c: CallDoc, names: Names) {
  const known = c.tool !== '';
  return {
    id: c._id,
    at: c.at,
    server: known ? (names.servers.get(c.server_id) ?? c.server_id) : null,
    server_id: names.servers.has(c.server_id) ? c.server_id : null,
    key: known ? (names.keys.get(c.key_id) ?? c.key_id) : null,
    tool: known ? c.tool : null,
    outcome: c.outcome,
    outcomeText: OUTCOME_NAMES[c.outcome],
    tone: c.outcome === 'ok' ? 'ok' : c.outcome === 'refunded' ? 'warn' : c.outcome === 'rejected' ? '' : 'danger',
    code: c.code,
    credits: c.credits,
    charged: c.charged,
    latency: c.latency_ms,
    via: c.via ?? null,
  };
}

export async function callsView(d: ApiDeps, ownerId: string, query: Record<string, unknown>) {
  const given = (name: string) => (typeof query[name] === 'string' ? (query[name] as string) : '');
  const filters = {
    server: given('server'),
    key: given('key'),
    end_user: given('end_user'),
    tool: given('tool'),
    outcome: given('outcome'),
    from: given('from'),
    to: given('to'),
  };
  const chosen = Object.entries(filters).filter(([, v]) => v);
  // A day typed in "to" includes that whole day.
  const params = new URLSearchParams(chosen);
  if (DAY.test(filters.to)) params.set('to', `${filters.to}T23:59:59.999Z`);
  const names = await callNames(d, ownerId);
  const tools = new Set<string>();
  for (const sv of await d.servers.list(ownerId)) for (const t of await d.tools.list(ownerId, sv._id)) tools.add(t.name);
  if (filters.tool) tools.add(filters.tool);
  const option = (value: string, label: string, selected: string) => ({ value, label, selected: value === selected });
  // The calls of one end user (from the End users page): kept by the form while the other filters change.
  const endUser = filters.end_user ? await d.endUsers.get(ownerId, filters.end_user) : null;
  const view = {
    filters,
    filtered: chosen.length > 0,
    endUser: filters.end_user
      ? { id: filters.end_user, label: endUser ? (endUser.display_name ?? endUser.external_id) : `${filters.end_user} (deleted)` }
      : null,
    servers: [...names.servers].map(([id, name]) => option(id, name, filters.server)),
    keys: [...names.keys].map(([id, name]) => option(id, name, filters.key)),
    tools: [...tools].sort().map((t) => option(t, t, filters.tool)),
    outcomes: CALL_OUTCOMES.map((o) => option(o, OUTCOME_NAMES[o], filters.outcome)),
    exportCsv: `/api/calls?${new URLSearchParams([...params, ['format', 'csv']])}`,
  };
  let q: CallQuery & { cursor?: string };
  try {
    q = callsQuery({ ...Object.fromEntries(params), limit: String(PAGE_SIZE), cursor: given('cursor') || undefined });
  } catch (err) {
    if (err instanceof ApiError) return { ...view, problem: err.message, calls: [], paged: false, firstPage: '/calls', olderPage: null };
    throw err;
  }
  let page: { calls: CallDoc[]; next_cursor: string | null };
  try {
    page = await listCalls(d.ledger.calls, ownerId, q, { limit: PAGE_SIZE, cursor: q.cursor });
  } catch (err) {
    if (err instanceof CursorError) return { ...view, problem: err.message, calls: [], paged: false, firstPage: '/calls', olderPage: null };
    throw err;
  }
  return {
    ...view,
    problem: null,
    calls: page.calls.map((c) => callRow(c, names)),
    paged: Boolean(given('cursor')),
    firstPage: `/calls${chosen.length ? `?${new URLSearchParams(chosen)}` : ''}`,
    olderPage: page.next_cursor ? `/calls?${new URLSearchParams([...chosen, ['cursor', page.next_cursor]])}` : null,
  };
}

/** One call of the owner, or null (another owner's call is "not found" too). */
export async function callView(d: ApiDeps, ownerId: string, id: string) {
  const c = await d.ledger.calls.findOne({ _id: id, owner_id: ownerId });
  if (!c) return null;
  const names = await callNames(d, ownerId);
  return {
    call: {
      ...callRow(c, names),
      key_id: c.key_id,
      message: c.message ?? null,
      providerStatus: c.provider_status ?? null,
      explanation: callExplanation(c),
      interrupted: c.code === 'interrupted' && c.tool === '',
    },
  };
}
