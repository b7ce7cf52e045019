// The audit trail: owners read their own events, the operator everyone's. Paged newest first with a cursor;
// `format=csv` or `format=json` exports every matching event (up to EXPORT_MAX) as a download.
import type Router from '@koa/router';
import type { Context } from 'koa';
import { AUDIT_ACTIONS, AUDIT_FAMILIES, type AuditDoc, type AuditQuery, type AuditTrail, csvOf, publicEvent } from '../audit/audit-trail.ts';
import { type ApiDeps, type Guards, me } from './context.ts';
import { ApiError } from './http.ts';

const EXPORT_MAX = 10_000;
const EXPORT_PAGE = 500;

/** The filter of an audit query string; every problem names its parameter. */
export function auditQuery(query: Record<string, unknown>): AuditQuery & { limit: number; cursor?: string; format?: 'csv' | 'json' } {
  const text = (name: string): string | undefined => {
    const v = query[name];
    if (Array.isArray(v)) throw new ApiError(400, `"${name}" is given more than once`);
    return typeof v === 'string' && v !== '' ? v : undefined;
  };
  const date = (name: string) => {
    const v = text(name);
    if (v === undefined) return undefined;
    const t = new Date(v);
    if (Number.isNaN(t.getTime())) throw new ApiError(400, `"${name}" must be an ISO 8601 time, e.g. 2026-01-31 or 2026-01-31T12:00:00Z`);
    return t;
  };
  const actions = text('action')
    ?.split(',')
    .map((a) => a.trim())
    .filter(Boolean)
    .flatMap((a) => {
      if ((AUDIT_ACTIONS as readonly string[]).includes(a)) return [a];
      if (AUDIT_FAMILIES.includes(a)) return AUDIT_ACTIONS.filter((x) => x.startsWith(`${a}.`) || x === a);
      throw new ApiError(400, `"action": ${a} is not an action; use one of ${AUDIT_ACTIONS.join(', ')}, or a family (${AUDIT_FAMILIES.join(', ')})`);
    });
  const limitText = text('limit');
  const limit = limitText === undefined ? 50 : Number(limitText);
  if (!Number.isInteger(limit) || limit < 1 || limit > 200) throw new ApiError(400, '"limit" must be a whole number from 1 to 200');
  const format = text('format');
  if (format !== undefined && format !== 'csv' && format !== 'json')
    throw new ApiError(400, '"format" must be csv or json (a download of every matching event)');
  const from = date('from');
  const to = date('to');
  if (from && to && from > to) throw new ApiError(400, '"from" must not be after "to"');
  return { from, to, actions, limit, cursor: text('cursor'), format };
}

/** Every matching event, newest first, read page by page (never more than EXPORT_MAX). */
export async function exportEvents(audit: AuditTrail, q: AuditQuery): Promise<AuditDoc[]> {
  const all: AuditDoc[] = [];
  let cursor: string | undefined;
  do {
    const page = await audit.list(q, { limit: Math.min(EXPORT_PAGE, EXPORT_MAX - all.length), cursor });
    all.push(...page.events);
    cursor = page.next_cursor ?? undefined;
  } while (cursor && all.length < EXPORT_MAX);
  return all;
}

export function auditRoutes(router: Router, d: ApiDeps, g: Guards): void {
  const answer = async (ctx: Context, ownerId: string | undefined) => {
    const q = auditQuery(ctx.query);
    const filter: AuditQuery = { ownerId, from: q.from, to: q.to, actions: q.actions };
    if (q.format) {
      const events = await exportEvents(d.audit, filter);
      const stamp = new Date().toISOString().slice(0, 19).replace(/:/g, '-');
      ctx.set('Content-Disposition', `attachment; filename="audit-${stamp}.${q.format}"`);
      ctx.set('Cache-Control', 'no-store');
      if (q.format === 'csv') {
        ctx.type = 'text/csv; charset=utf-8';
        ctx.body = csvOf(events);
      } else ctx.body = { events: events.map(publicEvent) };
      return;
    }
    const page = await d.audit.list(filter, { limit: q.limit, cursor: q.cursor });
    ctx.body = { events: page.events.map(publicEvent), next_cursor: page.next_cursor };
  };
  router.get('/audit', g.owner, (ctx) => answer(ctx, me(ctx)._id));
  router.get('/admin/audit', g.operator, (ctx) => {
    const owner = ctx.query.owner;
    if (owner !== undefined && typeof owner !== 'string') throw new ApiError(400, '"owner" is given more than once');
    return answer(ctx, owner || undefined);
  });
}
