// The management API for owners (servers, API keys, accounts, custom tools, credits, usage) and the
// operator (owners, credit grants). JSON in, JSON out; an owner only ever sees its own objects (404).
import Router from '@koa/router';
import type { Context, Next } from 'koa';
import { AccountFieldError, type Accounts, publicAccount } from '../accounts/accounts.ts';
import { type ApiKeys, publicKey } from '../access/keys.ts';
import type { OwnerDoc, Owners } from '../access/owners.ts';
import type { Credits } from '../billing/credits.ts';
import type { Usage } from '../billing/usage.ts';
import type { Engine } from '../engine/index.ts';
import { BodyTooLargeError, readBody } from '../http/body.ts';
import { sameSecret } from '../secrets.ts';
import { SERVER_ID_PATTERN, type Servers, publicServer } from '../servers/servers.ts';
import { type CustomTools, type ToolDoc, publicTool } from '../servers/tools.ts';
import type { CatalogSource } from '../spec/live.ts';
import { DuplicateKeyError } from '../store/index.ts';
import { ToolError } from '../tool-error.ts';
import { ApiError } from './api-error.ts';
import { checkToolBinding } from './tool-binding.ts';

export interface ApiDeps {
  owners: Owners;
  servers: Servers;
  keys: ApiKeys;
  tools: CustomTools;
  accounts: Accounts;
  credits: Credits;
  usage: Usage;
  catalog: CatalogSource;
  engine: Engine;
  operatorToken: string;
  maxBodyBytes: number;
}

const STATUS_NAMES: Record<number, string> = { 400: 'Bad Request', 401: 'Unauthorized', 403: 'Forbidden', 404: 'Not Found', 409: 'Conflict', 413: 'Payload Too Large', 415: 'Unsupported Media Type', 502: 'Bad Gateway' };

const notFound = (what: string) => new ApiError(404, `${what} not found`);

export function createApiRouter(d: ApiDeps): Router {
  const router = new Router({ prefix: '/api' });

  router.use(async (ctx: Context, next: Next) => {
    try {
      await next();
    } catch (err) {
      let status = 500;
      let message = 'Internal error';
      if (err instanceof ApiError) [status, message] = [err.status, err.message];
      else if (err instanceof AccountFieldError) [status, message] = [400, err.message];
      else if (err instanceof DuplicateKeyError) [status, message] = [409, `${err.collection.replace(/s$/, '')} already exists (${err.fields.join(', ')} must be unique)`];
      else ctx.app.emit('error', err, ctx);
      ctx.status = status;
      ctx.body = { error: STATUS_NAMES[status] ?? 'Internal Server Error', message };
    }
  });

  // ---- operator ----
  const operator = async (ctx: Context, next: Next) => {
    const token = bearer(ctx);
    if (!token || !sameSecret(token, d.operatorToken)) {
      ctx.set('WWW-Authenticate', 'Bearer');
      throw new ApiError(401, 'An operator token is required');
    }
    await next();
  };

  router.post('/admin/owners', operator, async (ctx) => {
    const body = await jsonBody(ctx, d.maxBodyBytes);
    const email = str(body, 'email', { required: true, pattern: /^[^\s@]+@[^\s@]+\.[^\s@]+$/, what: 'an e-mail address' })!;
    const { owner, token } = await d.owners.create(email);
    ctx.status = 201;
    ctx.body = { id: owner._id, email: owner.email, token };
  });

  router.post('/admin/owners/:id/credits', operator, async (ctx) => {
    const body = await jsonBody(ctx, d.maxBodyBytes);
    if (!(await d.owners.get(ctx.params.id))) throw notFound('Owner');
    const amount = body.amount;
    if (typeof amount !== 'number' || !Number.isInteger(amount)) throw new ApiError(400, '"amount" must be an integer (negative to debit)');
    ctx.body = { balance: await d.credits.grant(ctx.params.id, amount) };
  });

  // ---- owners ----
  const owner = async (ctx: Context, next: Next) => {
    const token = bearer(ctx);
    const found = token ? await d.owners.authenticate(token) : null;
    if (!found) {
      ctx.set('WWW-Authenticate', 'Bearer');
      throw new ApiError(401, 'An owner token (Authorization: Bearer mcpo_...) is required');
    }
    ctx.state.owner = found;
    await next();
  };
  const me = (ctx: Context): OwnerDoc => ctx.state.owner as OwnerDoc;
  const ownServer = async (ctx: Context, id: string) => {
    const server = await d.servers.get(me(ctx)._id, id);
    if (!server) throw notFound('Server');
    return server;
  };

  router.get('/me', owner, (ctx) => {
    ctx.body = { id: me(ctx)._id, email: me(ctx).email };
  });

  router.get('/catalog', owner, (ctx) => {
    const catalog = d.catalog.current;
    ctx.body = {
      tools: [...catalog.tools.values()].map((t) => ({ id: t.spec.id, provider: t.spec.provider, account_kind: t.provider.spec.account.kind, title: t.spec.title, credits: t.spec.credits, input: t.spec.input })),
      account_kinds: [...catalog.providers.values()].map((p) => ({ kind: p.spec.account.kind, title: p.spec.title, fields: p.spec.account.fields })),
    };
  });

  // servers
  router.post('/servers', owner, async (ctx) => {
    const body = await jsonBody(ctx, d.maxBodyBytes);
    const name = str(body, 'name', { required: true })!;
    const id = str(body, 'id', { pattern: SERVER_ID_PATTERN, what: '1-64 letters, digits, "_" or "-", starting with a letter or digit' });
    ctx.status = 201;
    ctx.body = publicServer(await d.servers.create(me(ctx)._id, name, id));
  });
  router.get('/servers', owner, async (ctx) => {
    ctx.body = { servers: (await d.servers.list(me(ctx)._id)).map(publicServer) };
  });
  router.get('/servers/:id', owner, async (ctx) => {
    ctx.body = publicServer(await ownServer(ctx, ctx.params.id));
  });
  router.patch('/servers/:id', owner, async (ctx) => {
    const body = await jsonBody(ctx, d.maxBodyBytes);
    onlyFields(body, ['name', 'active']);
    const changes: { name?: string; active?: boolean } = {};
    if (body.name !== undefined) changes.name = str(body, 'name', { required: true })!;
    if (body.active !== undefined) {
      if (typeof body.active !== 'boolean') throw new ApiError(400, '"active" must be true or false');
      changes.active = body.active;
    }
    const updated = await d.servers.update(me(ctx)._id, ctx.params.id, changes);
    if (!updated) throw notFound('Server');
    ctx.body = publicServer(updated);
  });
  router.delete('/servers/:id', owner, async (ctx) => {
    await ownServer(ctx, ctx.params.id);
    await d.keys.forgetServer(me(ctx)._id, ctx.params.id);
    await d.tools.deleteForServer(me(ctx)._id, ctx.params.id);
    await d.servers.delete(me(ctx)._id, ctx.params.id);
    ctx.status = 204;
  });

  // API keys
  const createdKey = (doc: Awaited<ReturnType<ApiKeys['create']>>) => ({
    id: doc.doc._id,
    name: doc.doc.name,
    key: doc.key,
    kind: doc.doc.kind,
    server_id: doc.doc.server_id,
    created_at: doc.doc.created_at,
  });
  router.post('/servers/:id/api-keys/revoke-all', owner, async (ctx) => {
    await ownServer(ctx, ctx.params.id);
    ctx.body = await d.keys.revokeAll(me(ctx)._id, ctx.params.id);
  });
  router.post('/servers/:id/api-keys', owner, async (ctx) => {
    const body = await jsonBody(ctx, d.maxBodyBytes);
    await ownServer(ctx, ctx.params.id);
    const name = str(body, 'name', { required: true })!;
    ctx.status = 201;
    ctx.body = createdKey(await d.keys.create(me(ctx)._id, name, { kind: 'server', serverId: ctx.params.id }));
  });
  router.get('/servers/:id/api-keys', owner, async (ctx) => {
    await ownServer(ctx, ctx.params.id);
    ctx.body = { api_keys: (await d.keys.listForServer(me(ctx)._id, ctx.params.id)).map(publicKey) };
  });
  router.delete('/servers/:id/api-keys/:keyId', owner, async (ctx) => {
    await ownServer(ctx, ctx.params.id);
    const doc = await d.keys.revoke(me(ctx)._id, ctx.params.id, ctx.params.keyId);
    if (!doc) throw notFound('API key');
    ctx.body = { id: doc._id, revoked_at: doc.revoked_at };
  });
  router.post('/api-keys', owner, async (ctx) => {
    const body = await jsonBody(ctx, d.maxBodyBytes, true);
    const name = str(body, 'name') ?? 'Global key';
    ctx.status = 201;
    ctx.body = createdKey(await d.keys.create(me(ctx)._id, name, { kind: 'global' }));
  });
  router.get('/api-keys', owner, async (ctx) => {
    ctx.body = { api_keys: (await d.keys.listGlobal(me(ctx)._id)).map(publicKey) };
  });
  const globalKey = async (ctx: Context) => {
    const key = await d.keys.get(me(ctx)._id, ctx.params.keyId);
    if (!key) throw notFound('API key');
    if (key.kind !== 'global') throw new ApiError(400, 'Only global keys are linked to servers; this key belongs to one server');
    return key;
  };
  router.post('/api-keys/:keyId/servers/:serverId', owner, async (ctx) => {
    const key = await globalKey(ctx);
    await ownServer(ctx, ctx.params.serverId);
    if (key.revoked_at) throw new ApiError(409, 'This key is revoked');
    const doc = (await d.keys.link(me(ctx)._id, key._id, ctx.params.serverId))!;
    ctx.body = { id: doc._id, linked_server_ids: doc.linked_server_ids };
  });
  router.delete('/api-keys/:keyId/servers/:serverId', owner, async (ctx) => {
    const key = await globalKey(ctx);
    if (!key.linked_server_ids.includes(ctx.params.serverId)) throw notFound('Link to this server');
    const doc = (await d.keys.unlink(me(ctx)._id, key._id, ctx.params.serverId))!;
    ctx.body = { id: doc._id, linked_server_ids: doc.linked_server_ids };
  });

  // accounts
  const ownAccount = async (ctx: Context) => {
    const doc = await d.accounts.get(me(ctx)._id, ctx.params.id);
    if (!doc) throw notFound('Account');
    return doc;
  };
  const showAccount = (doc: Parameters<typeof publicAccount>[0]) => publicAccount(doc, d.accounts.providersByKind.get(doc.kind));
  router.post('/accounts', owner, async (ctx) => {
    const { kind, name, ...fields } = await jsonBody(ctx, d.maxBodyBytes);
    d.accounts.providerFor(kind);
    const label = str({ name }, 'name', { required: true })!;
    ctx.status = 201;
    ctx.body = showAccount(await d.accounts.create(me(ctx)._id, kind as string, label, fields));
  });
  router.get('/accounts', owner, async (ctx) => {
    ctx.body = { accounts: (await d.accounts.list(me(ctx)._id)).map(showAccount) };
  });
  router.get('/accounts/:id', owner, async (ctx) => {
    ctx.body = showAccount(await ownAccount(ctx));
  });
  router.patch('/accounts/:id', owner, async (ctx) => {
    const { name, kind, ...fields } = await jsonBody(ctx, d.maxBodyBytes);
    if (kind !== undefined) throw new ApiError(400, '"kind" cannot be changed; create a new account');
    const label = name === undefined ? undefined : str({ name }, 'name', { required: true });
    const doc = await d.accounts.update(me(ctx)._id, ctx.params.id, label, fields);
    if (!doc) throw notFound('Account');
    ctx.body = showAccount(doc);
  });
  router.delete('/accounts/:id', owner, async (ctx) => {
    await ownAccount(ctx);
    const users = await d.tools.usingAccount(me(ctx)._id, ctx.params.id);
    if (users.length) throw new ApiError(409, `The account is bound to tools: ${users.map((t) => `${t.name} on ${t.server_id}`).join(', ')}; rebind or delete them first`);
    await d.accounts.delete(me(ctx)._id, ctx.params.id);
    ctx.status = 204;
  });
  router.post('/accounts/:id/verify', owner, async (ctx) => {
    const doc = await ownAccount(ctx);
    const provider = d.accounts.providerFor(doc.kind);
    const creds = (await d.accounts.credentials(me(ctx)._id, doc._id))!;
    try {
      await d.engine.verify(provider, creds);
    } catch (err) {
      if (!(err instanceof ToolError)) throw err;
      ctx.body = { id: doc._id, verified: false, error: err.toJSON() };
      return;
    }
    await d.accounts.markVerified(doc._id);
    ctx.body = { id: doc._id, verified: true };
  });

  // custom tools
  router.post('/servers/:id/tools', owner, async (ctx) => {
    const body = await jsonBody(ctx, d.maxBodyBytes);
    await ownServer(ctx, ctx.params.id);
    onlyFields(body, ['name', 'base_tool', 'account_id', 'defaults', 'locked', 'description']);
    const binding = await checkToolBinding(d, me(ctx)._id, body);
    ctx.status = 201;
    ctx.body = publicTool(await d.tools.create({ owner_id: me(ctx)._id, server_id: ctx.params.id, ...binding }));
  });
  router.get('/servers/:id/tools', owner, async (ctx) => {
    await ownServer(ctx, ctx.params.id);
    ctx.body = { tools: (await d.tools.list(me(ctx)._id, ctx.params.id)).map(publicTool) };
  });
  const ownTool = async (ctx: Context): Promise<ToolDoc> => {
    await ownServer(ctx, ctx.params.id);
    const doc = await d.tools.get(me(ctx)._id, ctx.params.id, ctx.params.toolId);
    if (!doc) throw notFound('Tool');
    return doc;
  };
  router.get('/servers/:id/tools/:toolId', owner, async (ctx) => {
    ctx.body = publicTool(await ownTool(ctx));
  });
  router.patch('/servers/:id/tools/:toolId', owner, async (ctx) => {
    const body = await jsonBody(ctx, d.maxBodyBytes);
    const current = await ownTool(ctx);
    onlyFields(body, ['name', 'account_id', 'defaults', 'locked', 'description']);
    const binding = await checkToolBinding(d, me(ctx)._id, { ...current, ...body, base_tool: current.base_tool });
    ctx.body = publicTool((await d.tools.update(me(ctx)._id, ctx.params.id, current._id, binding))!);
  });
  router.delete('/servers/:id/tools/:toolId', owner, async (ctx) => {
    const doc = await ownTool(ctx);
    await d.tools.delete(me(ctx)._id, ctx.params.id, doc._id);
    ctx.status = 204;
  });

  // credits and usage
  router.get('/credits', owner, async (ctx) => {
    ctx.body = { balance: await d.credits.balance(me(ctx)._id) };
  });
  router.get('/usage', owner, async (ctx) => {
    const q = ctx.query;
    const date = (name: string) => {
      const v = q[name];
      if (v === undefined) return undefined;
      const t = new Date(String(v));
      if (Number.isNaN(t.getTime())) throw new ApiError(400, `"${name}" must be an ISO 8601 date`);
      return t;
    };
    const text = (name: string) => (typeof q[name] === 'string' ? (q[name] as string) : undefined);
    const rows = await d.usage.query(me(ctx)._id, { server: text('server'), key: text('key'), tool: text('tool'), from: date('from'), to: date('to') });
    ctx.body = {
      usage: rows.map((r) => ({ server_id: r.server_id, key_id: r.key_id, tool: r.tool, hour: r.hour, calls: r.calls, credits: r.credits, errors: r.errors, refunds: r.refunds })),
      total_credits: rows.reduce((s, r) => s + r.credits, 0),
      total_calls: rows.reduce((s, r) => s + r.calls, 0),
    };
  });

  return router;
}

function bearer(ctx: Context): string | undefined {
  return /^Bearer +(\S+)$/i.exec(ctx.get('authorization'))?.[1];
}

async function jsonBody(ctx: Context, limit: number, optional = false): Promise<Record<string, unknown>> {
  if (optional && !ctx.get('content-length') && !ctx.get('transfer-encoding')) return {};
  if (!ctx.is('application/json')) throw new ApiError(415, 'Content-Type must be application/json');
  let text: string;
  try {
    text = await readBody(ctx.req, limit);
  } catch (err) {
    if (err instanceof BodyTooLargeError) throw new ApiError(413, `The request body is larger than ${limit} bytes`);
    throw err;
  }
  if (optional && text.trim() === '') return {};
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    throw new ApiError(400, `The body is not valid JSON: ${(err as Error).message}`);
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) throw new ApiError(400, 'The body must be a JSON object');
  return value as Record<string, unknown>;
}

function str(body: Record<string, unknown>, name: string, o: { required?: boolean; pattern?: RegExp; what?: string } = {}): string | undefined {
  const v = body[name];
  if (v === undefined || v === null) {
    if (o.required) throw new ApiError(400, `"${name}" is required`);
    return undefined;
  }
  if (typeof v !== 'string' || v.trim() === '' || v.length > 200) throw new ApiError(400, `"${name}" must be a non-empty string of at most 200 characters`);
  if (o.pattern && !o.pattern.test(v)) throw new ApiError(400, `"${name}" must be ${o.what ?? `of the form ${o.pattern}`}`);
  return v;
}

function onlyFields(body: Record<string, unknown>, allowed: string[]): void {
  const extra = Object.keys(body).filter((k) => !allowed.includes(k));
  if (extra.length) throw new ApiError(400, `Unknown field(s): ${extra.join(', ')} (allowed: ${allowed.join(', ')})`);
}

