// Stored third-party accounts: fields per provider.yaml, secrets shown only as a mask, verification.
import type Router from '@koa/router';
import type { Context } from 'koa';
import { publicAccount } from '../accounts/accounts.ts';
import { requestInfo } from '../audit/request-context.ts';
import { ToolError } from '../tool-error.ts';
import { type ApiDeps, type Guards, me, withRoom } from './context.ts';
import { ApiError, jsonBody, notFound, str } from './http.ts';

const accountTarget = (a: { _id: string; name: string }) => ({ type: 'account', id: a._id, name: a.name });

export function accountsRoutes(router: Router, d: ApiDeps, g: Guards): void {
  const ownAccount = async (ctx: Context) => {
    const doc = await d.accounts.get(me(ctx)._id, ctx.params.id);
    if (!doc) throw notFound('Account');
    return doc;
  };
  /** What a request set: values of plain fields, and only the names of secret ones. */
  const fieldChanges = (kind: string, fields: Record<string, unknown>) => {
    const plain = new Set(
      d.accounts.providersByKind
        .get(kind)
        ?.spec.account.fields.filter((f) => !f.secret)
        .map((f) => f.name),
    );
    return Object.fromEntries(Object.entries(fields).map(([k, v]) => [k, plain.has(k) ? v : '(secret changed)']));
  };
  const showAccount = (doc: Parameters<typeof publicAccount>[0]) => publicAccount(doc, d.accounts.providersByKind.get(doc.kind));
  router.post('/accounts', g.owner, async (ctx) => {
    const { kind, name, ...fields } = await jsonBody(ctx, d.maxBodyBytes);
    d.accounts.providerFor(kind);
    const label = str({ name }, 'name', { required: true })!;
    const doc = await withRoom(
      d,
      ctx,
      'accounts',
      (owner) => d.accounts.count(owner),
      () => d.accounts.create(me(ctx)._id, kind as string, label, fields),
    );
    await d.audit.record(requestInfo(ctx), {
      action: 'account.create',
      owner_id: me(ctx)._id,
      target: accountTarget(doc),
      changes: { kind, ...fieldChanges(doc.kind, fields) },
    });
    ctx.status = 201;
    ctx.body = showAccount(doc);
  });
  router.get('/accounts', g.owner, async (ctx) => {
    ctx.body = { accounts: (await d.accounts.list(me(ctx)._id)).map(showAccount) };
  });
  router.get('/accounts/:id', g.owner, async (ctx) => {
    ctx.body = showAccount(await ownAccount(ctx));
  });
  router.patch('/accounts/:id', g.owner, async (ctx) => {
    const { name, kind, ...fields } = await jsonBody(ctx, d.maxBodyBytes);
    if (kind !== undefined) throw new ApiError(400, '"kind" cannot be changed; create a new account');
    const label = name === undefined ? undefined : str({ name }, 'name', { required: true });
    const doc = await d.accounts.update(me(ctx)._id, ctx.params.id, label, fields);
    if (!doc) throw notFound('Account');
    await d.audit.record(requestInfo(ctx), {
      action: 'account.update',
      owner_id: me(ctx)._id,
      target: accountTarget(doc),
      changes: { ...(label !== undefined ? { name: label } : {}), ...fieldChanges(doc.kind, fields) },
    });
    ctx.body = showAccount(doc);
  });
  router.delete('/accounts/:id', g.ownerRevoking, async (ctx) => {
    const account = await ownAccount(ctx);
    const users = await d.tools.usingAccount(me(ctx)._id, ctx.params.id);
    if (users.length)
      throw new ApiError(409, `The account is bound to tools: ${users.map((t) => `${t.name} on ${t.server_id}`).join(', ')}; rebind or delete them first`);
    await d.accounts.delete(me(ctx)._id, ctx.params.id);
    await d.audit.record(requestInfo(ctx), { action: 'account.delete', owner_id: me(ctx)._id, target: accountTarget(account) });
    ctx.status = 204;
  });
  router.post('/accounts/:id/verify', g.owner, async (ctx) => {
    const doc = await ownAccount(ctx);
    const provider = d.accounts.providerFor(doc.kind);
    const creds = (await d.accounts.credentials(me(ctx)._id, doc._id))!;
    let detail: string;
    try {
      detail = await d.engine.verify(provider, creds);
    } catch (err) {
      if (!(err instanceof ToolError)) throw err;
      await d.audit.record(requestInfo(ctx), {
        action: 'account.verify',
        owner_id: me(ctx)._id,
        target: accountTarget(doc),
        changes: { verified: false, error: err.code },
      });
      ctx.body = { id: doc._id, verified: false, error: err.toJSON() };
      return;
    }
    await d.accounts.markVerified(doc._id);
    await d.audit.record(requestInfo(ctx), { action: 'account.verify', owner_id: me(ctx)._id, target: accountTarget(doc), changes: { verified: true } });
    ctx.body = { id: doc._id, verified: true, detail };
  });
}
