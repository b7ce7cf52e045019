// The audit trail: owners read their own events, the operator everyone's. Paged newest first with a cursor;
// `format=csv` or `format=json` exports every matching event (up to EXPORT_MAX) as a streamed download.
import type Router from '@koa/router';
import type { Context } from 'koa';
import { AUDIT_ACTIONS, AUDIT_CSV_COLUMNS, AUDIT_FAMILIES, type AuditDoc, type AuditQuery, auditCsvRow, publicEvent } from '../audit/audit-trail.ts';
import { type ApiDeps, type Guards, me, refuseWhenLimited } from './context.ts';
import { ApiError } from './http.ts';
import { type ListPage, listQueryReader, sendDownload } from './list-query.ts';

/** The filter of an audit query string; every problem names its parameter. */
export function auditQuery(query: Record<string, unknown>): AuditQuery & ListPage {
  const read = listQueryReader(query, { maxLimit: 200, items: 'event' });
  const actions = read.list('action')?.flatMap((a) => {
    if ((AUDIT_ACTIONS as readonly string[]).includes(a)) return [a];
    if (AUDIT_FAMILIES.includes(a)) return AUDIT_ACTIONS.filter((x) => x.startsWith(`${a}.`) || x === a);
    throw new ApiError(400, `"action": ${a} is not an action; use one of ${AUDIT_ACTIONS.join(', ')}, or a family (${AUDIT_FAMILIES.join(', ')})`);
  });
  return { ...read.page(), actions };
}

export function auditRoutes(router: Router, d: ApiDeps, g: Guards): void {
  /** An owner's own events (the owner's downloads count against its limit), or the operator's view. */
  const answer = async (ctx: Context, ownerId: string | undefined, byOwner: boolean) => {
    const q = auditQuery(ctx.query);
    const filter: AuditQuery = { ownerId, from: q.from, to: q.to, actions: q.actions };
    if (q.format) {
      if (byOwner) refuseWhenLimited(ctx, await d.ownerLimits.export(me(ctx)._id));
      sendDownload<AuditDoc>(ctx, q.format, {
        name: 'audit',
        read: async (page) => {
          const { events, next_cursor } = await d.audit.list(filter, page);
          return { items: events, next_cursor };
        },
        json: { field: 'events', item: publicEvent },
        csv: { columns: AUDIT_CSV_COLUMNS, row: auditCsvRow },
      });
      return;
    }
    const page = await d.audit.list(filter, { limit: q.limit, cursor: q.cursor });
    ctx.body = { events: page.events.map(publicEvent), next_cursor: page.next_cursor };
  };
  router.get('/audit', g.owner, (ctx) => answer(ctx, me(ctx)._id, true));
  router.get('/admin/audit', g.operator, (ctx) => {
    const owner = ctx.query.owner;
    if (owner !== undefined && typeof owner !== 'string') throw new ApiError(400, '"owner" is given more than once');
    return answer(ctx, owner || undefined, false);
  });
}
