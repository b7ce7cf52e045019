// What every route module gets: the repositories, the two guards and the current owner.
import type { Context, Next } from 'koa';
import type { Accounts } from '../accounts/accounts.ts';
import type { ApiKeys } from '../access/keys.ts';
import type { OwnerDoc, Owners } from '../access/owners.ts';
import type { Credits } from '../billing/credits.ts';
import type { Usage } from '../billing/usage.ts';
import type { Engine } from '../engine/index.ts';
import { sameSecret } from '../secrets.ts';
import type { ServerDoc, Servers } from '../servers/servers.ts';
import type { CustomTools } from '../servers/tools.ts';
import type { CatalogSource } from '../spec/live.ts';
import { ApiError, bearer, notFound } from './http.ts';

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

type Guard = (ctx: Context, next: Next) => Promise<void>;

export interface Guards {
  /** The operator token. */
  operator: Guard;
  /** An owner token; the owner is then `me(ctx)`. */
  owner: Guard;
}

export function guards(d: ApiDeps): Guards {
  return {
    async operator(ctx, next) {
      const token = bearer(ctx);
      if (!token || !sameSecret(token, d.operatorToken)) {
        ctx.set('WWW-Authenticate', 'Bearer');
        throw new ApiError(401, 'An operator token is required');
      }
      await next();
    },
    async owner(ctx, next) {
      const token = bearer(ctx);
      const found = token ? await d.owners.authenticate(token) : null;
      if (!found) {
        ctx.set('WWW-Authenticate', 'Bearer');
        throw new ApiError(401, 'An owner token (Authorization: Bearer mcpo_...) is required');
      }
      ctx.state.owner = found;
      await next();
    },
  };
}

export const me = (ctx: Context): OwnerDoc => ctx.state.owner as OwnerDoc;

/** The calling owner's server, or 404 (another owner's server is "not found" too). */
export async function ownServer(d: ApiDeps, ctx: Context, id: string): Promise<ServerDoc> {
  const server = await d.servers.get(me(ctx)._id, id);
  if (!server) throw notFound('Server');
  return server;
}
