// Who is asking, for the audit trail: the client's address and user agent, and the actor the guards
// recognised (a session, a management token, the operator, an OAuth client). Kept for the duration of a
// request (AsyncLocalStorage), so that an event recorded deep in a repository (a grant revoked because its
// refresh token came back) names the request's actor without threading the request through every call.
import { AsyncLocalStorage } from 'node:async_hooks';
import type { Context, Next } from 'koa';

export interface Actor {
  type: 'session' | 'token' | 'operator' | 'oauth_client' | 'anonymous';
  /** A session's short fingerprint, a management token's id, an OAuth client id. */
  id?: string;
  /** A management token's or an OAuth client's name. */
  name?: string;
}

export interface RequestInfo {
  ip: string;
  userAgent: string;
  actor: Actor;
}

const storage = new AsyncLocalStorage<RequestInfo>();

/** Koa middleware: every request below it has a RequestInfo (the MCP endpoint, which records nothing here, is mounted above it). */
export function requestContext(ctx: Context, next: Next): Promise<void> {
  return storage.run({ ip: ctx.ip, userAgent: ctx.get('user-agent').slice(0, 300), actor: { type: 'anonymous' } }, next);
}

/** The guards say who the request is from once they know. */
export function setActor(actor: Actor): void {
  const info = storage.getStore();
  if (info) info.actor = actor;
}

export const currentRequest = (): RequestInfo | undefined => storage.getStore();
