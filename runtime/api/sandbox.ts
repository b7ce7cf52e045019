// "Try it with sandbox accounts": one sandbox account per provider the service simulates (runtime/sandbox/),
// a server "Sandbox" exposing every base tool bound to them, and a new server key, shown once. Everything but
// the key is made once: asking again adds only what is missing (an account or a tool deleted since).
import type Router from '@koa/router';
import { publicKey } from '../access/keys.ts';
import { type AccountDoc, publicAccount } from '../accounts/accounts.ts';
import { connectSnippets } from '../servers/client-setup.ts';
import type { Sandboxes } from '../sandbox/sandboxes.ts';
import { type ServerDoc, publicServer } from '../servers/servers.ts';
import { type ApiDeps, type Guards, me } from './context.ts';
import { ApiError, jsonBody } from './http.ts';

export const SANDBOX_SERVER_NAME = 'Sandbox';

export function sandboxRoutes(router: Router, d: ApiDeps, g: Guards): void {
  const sandboxes = d.sandboxes;
  if (!sandboxes) {
    router.all('/sandbox', () => {
      throw new ApiError(404, 'Sandbox accounts are turned off on this service (SANDBOXES=off)');
    });
    return;
  }
  // One owner's requests run one after the other: two quick clicks make one set of accounts, not two.
  const running = new Map<string, Promise<unknown>>();
  router.post('/sandbox', g.owner, async (ctx) => {
    const extra = Object.keys(await jsonBody(ctx, d.maxBodyBytes, true));
    if (extra.length) throw new ApiError(400, `POST /api/sandbox takes no fields (got: ${extra.join(', ')})`);
    const ownerId = me(ctx)._id;
    const previous = running.get(ownerId) ?? Promise.resolve();
    const mine = previous.catch(() => undefined).then(() => setUp(d, sandboxes, ownerId));
    running.set(ownerId, mine);
    try {
      ctx.status = 201;
      ctx.body = await mine;
    } finally {
      if (running.get(ownerId) === mine) running.delete(ownerId);
    }
  });
}

async function setUp(d: ApiDeps, sandboxes: Sandboxes, ownerId: string): Promise<Record<string, unknown>> {
  const catalog = d.catalog.current;
  const providers = d.accounts.providersByKind;
  const existing = (await d.accounts.list(ownerId)).filter((a) => a.sandbox);
  await roomForSandbox(d, sandboxes, ownerId, existing);
  const accounts = new Map<string, AccountDoc>();
  for (const def of sandboxes.definitions) {
    if (!providers.has(def.kind)) continue;
    const account =
      existing.find((a) => a.kind === def.kind) ?? (await d.accounts.createSandbox(ownerId, def.kind, def.name, sandboxes.accountFields(ownerId, def)));
    accounts.set(def.kind, account);
  }

  let server: ServerDoc | null | undefined = (await d.servers.list(ownerId)).find((s) => s.sandbox);
  if (!server) server = await d.servers.create(ownerId, SANDBOX_SERVER_NAME, undefined, true);
  else if (!server.active) server = await d.servers.update(ownerId, server._id, { active: true });
  const serverId = server!._id;
  const tools = await d.tools.list(ownerId, serverId);
  for (const base of catalog.tools.values()) {
    const account = accounts.get(base.provider.spec.account.kind);
    if (!account || tools.some((t) => t.base_tool === base.spec.id || t.name === base.spec.id)) continue;
    tools.push(
      await d.tools.create({
        owner_id: ownerId,
        server_id: serverId,
        name: base.spec.id,
        base_tool: base.spec.id,
        account_id: account._id,
        defaults: {},
        locked: [],
        description: null,
      }),
    );
  }
  const created = await d.keys.create(ownerId, 'Sandbox key', { kind: 'server', serverId });
  // The sandboxes start now, while the person copies the key: the first call finds them running.
  sandboxes.warmUp(ownerId);

  const url = `${d.site.publicUrl}/mcp/${serverId}`;
  const example = sandboxes.definitions.map((def) => def.example).find((e) => tools.some((t) => t.name === e.tool));
  return {
    server: { ...publicServer(server!), url },
    accounts: [...accounts.values()].map((a) => publicAccount(a, providers.get(a.kind))),
    tools: tools.length,
    key: { ...publicKey(created.doc), key: created.key },
    idle_minutes: sandboxes.idleMinutes,
    example: example ? { name: example.tool, arguments: example.arguments } : null,
    snippets: connectSnippets(url, server!.name, created.key, example && { name: example.tool, arguments: example.arguments }),
  };
}

/** What a set-up would add must fit the owner's quotas, checked before anything is made (403 naming the limit). */
async function roomForSandbox(d: ApiDeps, sandboxes: Sandboxes, ownerId: string, existing: AccountDoc[]): Promise<void> {
  const kinds = sandboxes.definitions.filter((def) => d.accounts.providersByKind.has(def.kind)).map((def) => def.kind);
  const server = (await d.servers.list(ownerId)).find((s) => s.sandbox);
  const present = new Set((server ? await d.tools.list(ownerId, server._id) : []).flatMap((t) => [t.base_tool, t.name]));
  const tools = [...d.catalog.current.tools.values()].filter((base) => kinds.includes(base.provider.spec.account.kind) && !present.has(base.spec.id));
  const limits = d.ownerLimits;
  await limits.ensureRoom('accounts', kinds.filter((k) => !existing.some((a) => a.kind === k)).length, () => d.accounts.count(ownerId));
  await limits.ensureRoom('servers', server ? 0 : 1, () => d.servers.count(ownerId));
  await limits.ensureRoom('tools', tools.length, () => d.tools.countForOwner(ownerId));
  await limits.ensureRoom('keys', 1, () => d.keys.countLive(ownerId));
}
