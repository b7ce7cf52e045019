// The Activity page: the owner's audit trail, filtered by kind of action and days, paged (older with the
// cursor), with CSV and JSON downloads of what the filter selects. The filters are read by the same function as
// GET /api/audit, so the page and the API accept and refuse the same things.
import { auditQuery } from '../api/audit.ts';
import type { ApiDeps } from '../api/context.ts';
import { ApiError } from '../api/http.ts';
import { AUDIT_ACTIONS, AUDIT_FAMILIES, type AuditDoc, CursorError } from '../audit/audit-trail.ts';
import type { Actor } from '../audit/request-context.ts';

const PAGE_SIZE = 50;
const DAY = /^\d{4}-\d{2}-\d{2}$/;

const FAMILY_NAMES: Record<string, string> = {
  signin: 'Sign-ins',
  signout: 'Sign-outs',
  session: 'Sessions',
  password: 'Password',
  invitation: 'Invitations',
  owner: 'Your account',
  token: 'Management tokens',
  credits: 'Credits',
  server: 'Servers',
  tool: 'Tools',
  account: 'Accounts',
  key: 'API keys',
  grant: 'Connected apps',
  webhook: 'Webhooks',
  oauth_app: 'OAuth apps',
  end_user: 'End users',
  connect_session: 'Connect links',
};

export function actorText(a: Actor): string {
  switch (a.type) {
    case 'session':
      return `Dashboard session ${a.id ?? ''}`.trim();
    case 'token':
      return `Management token “${a.name ?? a.id}”`;
    case 'operator':
      return 'Operator';
    case 'end_user':
      return `End user “${a.name ?? a.id}”`;
    case 'oauth_client':
      return `App “${a.name ?? a.id}”`;
    case 'service':
      return 'This service';
    default:
      return 'Not signed in';
  }
}

const short = (v: unknown) => {
  const text = typeof v === 'string' ? v : JSON.stringify(v);
  return text.length > 120 ? `${text.slice(0, 117)}…` : text;
};

/** What changed, one "field: from → to" (or "field: value") per line. */
function changeLines(changes: Record<string, unknown> | null): string[] {
  return Object.entries(changes ?? {}).map(([k, v]) =>
    v !== null && typeof v === 'object' && 'from' in v && 'to' in v ? `${k}: ${short(v.from)} → ${short(v.to)}` : `${k}: ${short(v)}`,
  );
}

const tone = (action: string) =>
  action === 'signin.fail' ? 'danger' : /\.(revoke|revoke_all|delete|deny)$/.test(action) ? 'warn' : action.startsWith('signin') ? 'ok' : 'accent';

export async function activityView(d: ApiDeps, ownerId: string, query: Record<string, unknown>) {
  const given = (name: string) => (typeof query[name] === 'string' ? (query[name] as string) : '');
  const filters = { action: given('action'), from: given('from'), to: given('to') };
  const chosen = Object.entries(filters).filter(([, v]) => v);
  // A day typed in "to" includes that whole day.
  const params = new URLSearchParams();
  if (filters.action) params.set('action', filters.action);
  if (filters.from) params.set('from', filters.from);
  if (filters.to) params.set('to', DAY.test(filters.to) ? `${filters.to}T23:59:59.999Z` : filters.to);
  const view = {
    filters,
    families: AUDIT_FAMILIES.map((f) => ({ value: f, label: FAMILY_NAMES[f] ?? f, selected: f === filters.action })),
    actions: AUDIT_ACTIONS.map((a) => ({ value: a, selected: a === filters.action })),
    exportCsv: `/api/audit?${new URLSearchParams([...params, ['format', 'csv']])}`,
    exportJson: `/api/audit?${new URLSearchParams([...params, ['format', 'json']])}`,
  };
  let q: ReturnType<typeof auditQuery>;
  try {
    q = auditQuery({ ...Object.fromEntries(params), limit: String(PAGE_SIZE), cursor: given('cursor') || undefined });
  } catch (err) {
    if (err instanceof ApiError) return { ...view, problem: err.message, events: [] };
    throw err;
  }
  let page: { events: AuditDoc[]; next_cursor: string | null };
  try {
    page = await d.audit.list({ ownerId, from: q.from, to: q.to, actions: q.actions }, { limit: PAGE_SIZE, cursor: q.cursor });
  } catch (err) {
    if (err instanceof CursorError) return { ...view, problem: err.message, events: [] };
    throw err;
  }
  return {
    ...view,
    events: page.events.map((e) => ({
      at: e.at,
      action: e.action,
      tone: tone(e.action),
      actor: actorText(e.actor),
      target: e.target ? `${e.target.name ?? e.target.id}` : '',
      targetDetail: e.target ? `${e.target.type} ${e.target.id}` : '',
      ip: e.ip,
      userAgent: e.user_agent,
      changes: changeLines(e.changes),
    })),
    paged: Boolean(given('cursor')),
    firstPage: `/activity${chosen.length ? `?${new URLSearchParams(chosen)}` : ''}`,
    olderPage: page.next_cursor ? `/activity?${new URLSearchParams([...chosen, ['cursor', page.next_cursor]])}` : null,
  };
}
