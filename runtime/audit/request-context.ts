// Who is asking, for the audit trail: the client's address and user agent, and the actor the guards
// recognised (a session, a management token, the operator, an OAuth client). Kept on the request's Koa
// context and handed to the audit trail by whoever records an event. Not an AsyncLocalStorage: on Node 20 one
// turns on promise hooks for the whole process, which cost every MCP call about 45 µs of CPU (bench:profile).
import type { Context } from 'koa';

export interface Actor {
  /** `service`: the service itself (a token refresh, a health check). */
  type: 'session' | 'token' | 'operator' | 'oauth_client' | 'service' | 'anonymous' | 'end_user';
  /** A session's short fingerprint, a management token's id, an OAuth client id, an end user's id. */
  id?: string;
  /** A management token's or an OAuth client's name, an end user's external id. */
  name?: string;
}

export interface RequestInfo {
  ip: string;
  userAgent: string;
  actor: Actor;
}

/** The request's RequestInfo, made on first use (anonymous until a guard says who it is). */
export function requestInfo(ctx: Context): RequestInfo {
  return ((ctx.state.requestInfo as RequestInfo | undefined) ??= { ip: ctx.ip, userAgent: ctx.get('user-agent').slice(0, 300), actor: { type: 'anonymous' } });
}

/** The guards say who the request is from once they know. */
export function setActor(ctx: Context, actor: Actor): void {
  requestInfo(ctx).actor = actor;
}
