// Operator routes: owners and their credits, the ledger's checks, reloading the tool specs.
import type Router from '@koa/router';
import { requestInfo } from '../audit/request-context.ts';
import { type ApiDeps, type Guards } from './context.ts';
import { ApiError, jsonBody, notFound, str } from './http.ts';

/** The largest credit grant or debit in one request: balances stay exact integers (far below 2^53). */
export const MAX_GRANT = 1_000_000_000;

/**
 * Grants (or, negative, debits) credits, and notes a grant's size for the owner's default low-balance alert; a
 * grant that lifts the balance to the alert or above arms the low-credit e-mail again.
 */
export async function grantCredits(d: Pick<ApiDeps, 'credits' | 'owners' | 'mail'>, ownerId: string, amount: number): Promise<number> {
  if (amount === 0) return d.credits.balance(ownerId);
  const balance = await d.credits.grant(ownerId, amount);
  await d.owners.noteGrant(ownerId, amount);
  if (amount > 0) await creditsChanged(d, ownerId, balance);
  return balance;
}

/** The balance or the alert changed: the low-credit e-mail is armed again when the balance is at or above the alert. */
export async function creditsChanged(d: Pick<ApiDeps, 'owners' | 'mail'>, ownerId: string, balance: number): Promise<void> {
  await d.owners.rearmCreditAlert(ownerId, balance);
  d.mail?.alerts.forget(ownerId);
}

export function adminRoutes(router: Router, d: ApiDeps, g: Guards): void {
  router.post('/admin/owners', g.operator, async (ctx) => {
    const body = await jsonBody(ctx, d.maxBodyBytes);
    const email = str(body, 'email', { required: true, pattern: /^[^\s@]+@[^\s@]+\.[^\s@]+$/, what: 'an e-mail address' })!;
    const { owner, token, invite } = await d.owners.create(email);
    await grantCredits(d, owner._id, d.site.startingCredits);
    await d.audit.record(requestInfo(ctx), {
      action: 'owner.create',
      owner_id: owner._id,
      target: { type: 'owner', id: owner._id, name: owner.email },
      changes: { via: 'invitation', starting_credits: d.site.startingCredits },
    });
    ctx.status = 201;
    // The invitation travels in the fragment: it never reaches a server log or a Referer header.
    ctx.body = { id: owner._id, email: owner.email, token, invite_url: `${d.site.publicUrl}/invite#${invite}` };
  });

  router.post('/admin/owners/:id/credits', g.operator, async (ctx) => {
    const body = await jsonBody(ctx, d.maxBodyBytes);
    if (!(await d.owners.get(ctx.params.id))) throw notFound('Owner');
    const amount = body.amount;
    if (typeof amount !== 'number' || !Number.isInteger(amount) || Math.abs(amount) > MAX_GRANT) {
      throw new ApiError(400, `"amount" must be a whole number from -${MAX_GRANT} to ${MAX_GRANT} (negative to debit)`);
    }
    const balance = await grantCredits(d, ctx.params.id, amount);
    await d.audit.record(requestInfo(ctx), {
      action: 'credits.grant',
      owner_id: ctx.params.id,
      target: { type: 'owner', id: ctx.params.id },
      changes: { amount, balance },
    });
    ctx.body = { balance };
  });

  // balance = granted - kept - open, for one owner or all (open: calls running now, and charges a stop left
  // behind that settlement has not reached yet).
  router.get('/admin/ledger/check', g.operator, async (ctx) => {
    const owner = typeof ctx.query.owner === 'string' ? ctx.query.owner : undefined;
    if (owner && !(await d.owners.get(owner))) throw notFound('Owner');
    const owners = await d.ledger.check(owner);
    ctx.body = { ok: owners.every((o) => o.ok), owners };
  });

  // The ledger's housekeeping now (settlement and roll-up; it also runs every minute): `ran` is false when
  // another instance holds its lease.
  router.post('/admin/ledger/housekeep', g.operator, async (ctx) => {
    const done = await d.ledger.housekeep();
    ctx.body = done ? { ran: true, ...done } : { ran: false };
  });

  // The tool specs of this process, reloaded now (each instance and each worker has its own catalog): what
  // changed, and the custom tools left without their spec; 422 with every problem when the set is refused
  // (the last good catalog stays in use).
  router.post('/admin/specs/reload', g.operator, async (ctx) => {
    const { ok, tools, providers, problems, catalog, ms } = await d.catalog.reload('api');
    const orphaned = (await d.tools.orphans()).map((t) => ({ owner_id: t.owner_id, server_id: t.server_id, tool: t.name, base_tool: t.base_tool }));
    if (!ok) {
      ctx.status = 422;
      ctx.body = {
        error: 'Unprocessable Entity',
        message: `The tool specs were not reloaded: ${problems.length} problem${problems.length === 1 ? '' : 's'}; the last good catalog stays in use`,
        reloaded: false,
        problems,
        catalog,
        orphaned,
      };
      return;
    }
    ctx.body = { reloaded: true, tools, providers, catalog, orphaned, ms };
  });
}
