// Credits balance and usage of the calling owner (the call log itself: calls.ts).
import type Router from '@koa/router';
import { USAGE_ROW_LIMIT, UsageTooLargeError } from '../billing/ledger.ts';
import { type ApiDeps, type Guards, me } from './context.ts';
import { ApiError } from './http.ts';

export function usageRoutes(router: Router, d: ApiDeps, g: Guards): void {
  router.get('/credits', g.owner, async (ctx) => {
    ctx.body = { balance: await d.credits.balance(me(ctx)._id) };
  });
  router.get('/usage', g.owner, async (ctx) => {
    const q = ctx.query;
    const date = (name: string) => {
      const v = q[name];
      if (v === undefined) return undefined;
      const t = new Date(String(v));
      if (Number.isNaN(t.getTime())) throw new ApiError(400, `"${name}" must be an ISO 8601 date`);
      return t;
    };
    const text = (name: string) => (typeof q[name] === 'string' ? (q[name] as string) : undefined);
    const filter = { server: text('server'), key: text('key'), endUser: text('end_user'), tool: text('tool'), from: date('from'), to: date('to') };
    // Bounded: more aggregates than the limit is refused rather than read.
    const rows = await d.ledger.usage(me(ctx)._id, filter, USAGE_ROW_LIMIT).catch((err: unknown) => {
      throw err instanceof UsageTooLargeError ? new ApiError(400, err.message) : err;
    });
    ctx.body = {
      usage: rows.map((r) => ({
        server_id: r.server_id,
        key_id: r.key_id,
        end_user_id: r.end_user_id ?? null,
        tool: r.tool,
        hour: r.hour,
        calls: r.calls,
        credits: r.credits,
        errors: r.errors,
        refunds: r.refunds,
      })),
      total_credits: rows.reduce((s, r) => s + r.credits, 0),
      total_calls: rows.reduce((s, r) => s + r.calls, 0),
    };
  });
}
