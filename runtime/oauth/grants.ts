// What an owner's "Approve" creates: an authorization code, then a grant (a "connected app": one client, one
// server, restricted like a key; approved by one of the owner's end users, it acts as that person) with its short-lived access tokens and rotating refresh tokens. Every code
// and token is stored only as its SHA-256. A reused code revokes the whole grant; so does a reused refresh
// token, unless the same client presents it again within the reuse window (RFC 9700 section 4.14.2 allows
// this: clients that refresh from two places at once, or retry a refresh whose answer was lost, would
// otherwise be disconnected). Such a replay gets the very pair the first use got (it is derived from the spent
// token with a secret of the service), so an authorization stays one line of tokens, never a tree of live
// branches. A code or token presented by another client is refused and stays usable.
import { createHash } from 'node:crypto';
import { type Restrictions, UNRESTRICTED, isExpired, restrictionsView } from '../access/restrictions.ts';
import type { AuditTrail } from '../audit/audit-trail.ts';
import type { RequestInfo } from '../audit/request-context.ts';
import { derivedToken, randomId, randomToken, sha256 } from '../secrets.ts';
import type { StoreClock } from '../store/clock.ts';
import { LastUsedTimes } from '../store/last-used.ts';
import type { Collection, Doc, Filter, Store } from '../store/port.ts';
import { retryTransient } from '../store/retry.ts';
import { TtlCache } from '../ttl-cache.ts';
import type { OAuthClient } from './clients.ts';
import { OAuthError } from './errors.ts';

/** The one scope: list and call the tools of one server, paid from the owner's credits. */
export const SCOPE = 'mcp:tools';
const ACCESS_PREFIX = 'mcpat_';
const REFRESH_PREFIX = 'mcprt_';
const CODE_PREFIX = 'mcpac_';
const CODE_TTL_MS = 60_000;

export interface GrantDoc extends Doc {
  owner_id: string;
  server_id: string;
  client_id: string;
  client_name: string;
  registration: OAuthClient['registration'];
  redirect_uri: string;
  /** The canonical URL of the server (RFC 8707 resource) its tokens are for. */
  resource: string;
  scope: string;
  created_at: Date;
  last_used_at: Date | null;
  revoked_at: Date | null;
  revoked_reason?: string;
  /** What the owner allowed on the consent page (absent on grants made before restrictions existed). */
  restrictions?: Restrictions;
  /** When its newest refresh token expires, unless used before: each refresh slides it forward (absent on older grants). */
  idle_expires_at?: Date;
  /** The owner's end user who approved it (their own browser session): its calls act as them. Absent: the owner approved. */
  end_user_id?: string;
}

interface CodeDoc extends Doc {
  client_id: string;
  client_name: string;
  registration: OAuthClient['registration'];
  redirect_uri: string;
  code_challenge: string;
  resource: string;
  scope: string;
  owner_id: string;
  server_id: string;
  expires_at: Date;
  used_at: Date | null;
  /** The grant the code was exchanged for (revoked if the code comes back). */
  grant_id?: string;
  restrictions: Restrictions;
  end_user_id?: string;
}

interface TokenDoc extends Doc {
  grant_id: string;
  client_id: string;
  server_id: string;
  owner_id: string;
  expires_at: Date;
  /** Refresh tokens only: when it was exchanged (a second exchange is a reuse). */
  used_at?: Date | null;
}

export interface TokenResponse {
  access_token: string;
  token_type: 'Bearer';
  expires_in: number;
  refresh_token: string;
  scope: string;
}

export interface Approval {
  client: OAuthClient;
  redirectUri: string;
  codeChallenge: string;
  resource: string;
  scope: string;
  ownerId: string;
  serverId: string;
  restrictions: Restrictions;
  /** Set when the owner's end user approved (the grant acts as them). */
  endUserId?: string;
}

export interface OAuthPrincipal {
  grantId: string;
  ownerId: string;
  serverId: string;
  restrictions?: Restrictions;
  endUserId?: string;
}

/** The list view of a grant (the Keys page's "Connected apps"). */
export function publicGrant(g: GrantDoc) {
  return {
    id: g._id,
    client_id: g.client_id,
    client_name: g.client_name,
    registration: g.registration,
    redirect_host: new URL(g.redirect_uri).host,
    server_id: g.server_id,
    scope: g.scope,
    created_at: g.created_at,
    last_used_at: g.last_used_at,
    revoked_at: g.revoked_at,
    revoked_reason: g.revoked_reason ?? null,
    /** Disconnected if not used (refreshed) before this time; each refresh moves it forward. */
    idle_expires_at: g.idle_expires_at ?? null,
    /** The end user who approved it, whose accounts its calls use (null: the owner approved). */
    end_user_id: g.end_user_id ?? null,
    ...restrictionsView(g.restrictions),
  };
}

/** base64url(SHA-256(verifier)): the S256 code challenge of RFC 7636. */
export const s256 = (verifier: string) => createHash('sha256').update(verifier).digest('base64url');

export class OAuthGrants {
  private readonly grants: Collection<GrantDoc>;
  private readonly codes: Collection<CodeDoc>;
  private readonly access: Collection<TokenDoc>;
  private readonly refresh: Collection<TokenDoc>;
  /** Hot path: access token hash -> token (null: unknown), grant id -> grant. Revocations here drop entries at once. */
  private readonly tokenCache: TtlCache<string, TokenDoc | null>;
  private readonly grantCache: TtlCache<string, GrantDoc | null>;
  private readonly touched: LastUsedTimes;
  /** Lifetimes, expiry and the refresh grace window are judged by the store's time (one clock for every instance). */
  private readonly clock: StoreClock;

  constructor(
    store: Store,
    private readonly opts: {
      accessMs: number;
      refreshMs: number;
      cacheMs: number;
      /** How long after its first use a refresh token may be presented again by the same client. */
      reuseMs: number;
      /** Derives the pair a refresh token is exchanged for, so that a replay within the reuse window gets the same pair. */
      successorSecret: Buffer;
      /** Where revocations a client caused (a reused code or refresh token, RFC 7009) are recorded. */
      audit?: AuditTrail;
    },
  ) {
    this.clock = store.clock;
    this.grants = store.collection<GrantDoc>('oauth_grants');
    this.codes = store.collection<CodeDoc>('oauth_codes');
    this.access = store.collection<TokenDoc>('oauth_access_tokens');
    this.refresh = store.collection<TokenDoc>('oauth_refresh_tokens');
    this.touched = new LastUsedTimes(this.grants, store.clock);
    this.tokenCache = new TtlCache(opts.cacheMs);
    this.grantCache = new TtlCache(opts.cacheMs);
  }

  /** The owner approved: a one-time code, valid for a minute, for this client, redirect URI and PKCE challenge. */
  async issueCode(a: Approval): Promise<string> {
    const code = randomToken(CODE_PREFIX);
    await this.codes.insertOne({
      _id: sha256(code),
      client_id: a.client.client_id,
      client_name: a.client.client_name,
      registration: a.client.registration,
      redirect_uri: a.redirectUri,
      code_challenge: a.codeChallenge,
      resource: a.resource,
      scope: a.scope,
      owner_id: a.ownerId,
      server_id: a.serverId,
      expires_at: new Date(this.clock.now() + CODE_TTL_MS),
      used_at: null,
      restrictions: a.restrictions,
      ...(a.endUserId ? { end_user_id: a.endUserId } : {}),
    });
    return code;
  }

  /** The authorization_code grant (RFC 6749 section 4.1.3 with PKCE, RFC 7636 section 4.6). */
  async redeemCode(p: {
    code: string;
    client: OAuthClient;
    redirectUri?: string;
    verifier?: string;
    resource?: string;
    request?: RequestInfo;
  }): Promise<TokenResponse> {
    if (!p.verifier) throw new OAuthError('invalid_request', 'code_verifier is required (PKCE with S256)');
    if (!/^[A-Za-z0-9\-._~]{43,128}$/.test(p.verifier))
      throw new OAuthError('invalid_request', 'code_verifier must be 43 to 128 characters of A-Z, a-z, 0-9, "-", ".", "_" and "~"');
    const id = sha256(p.code);
    const issued = await this.codes.findOne({ _id: id });
    if (!issued) throw new OAuthError('invalid_grant', 'Unknown authorization code');
    // Refused before it is spent: another client holding the code cannot use up the owner's approval.
    if (issued.client_id !== p.client.client_id) throw new OAuthError('invalid_grant', 'This authorization code was issued to another client');
    // Marked used atomically: of two concurrent exchanges only one gets the tokens.
    const code = await this.codes.findOneAndUpdate({ _id: id, used_at: null }, { $set: { used_at: this.clock.date() } }, { returnDocument: 'before' });
    if (!code) {
      const used = await this.codes.findOne({ _id: id });
      if (used?.grant_id) await this.revokeForClient(used.grant_id, 'authorization code used twice', p.request);
      throw new OAuthError(
        'invalid_grant',
        'This authorization code was already used; any token issued with it is now revoked. Start the authorization again.',
      );
    }
    if (code.expires_at.getTime() < this.clock.now())
      throw new OAuthError('invalid_grant', 'The authorization code expired (codes are valid for 60 seconds); start the authorization again');
    if (p.redirectUri !== code.redirect_uri) throw new OAuthError('invalid_grant', 'redirect_uri must be exactly the one sent in the authorization request');
    if (s256(p.verifier) !== code.code_challenge)
      throw new OAuthError('invalid_grant', 'code_verifier does not match the code_challenge of the authorization request');
    if (p.resource !== undefined && p.resource !== code.resource)
      throw new OAuthError('invalid_target', `resource must be the one that was authorized (${code.resource})`);

    const grant: GrantDoc = {
      _id: randomId('oag_'),
      owner_id: code.owner_id,
      server_id: code.server_id,
      client_id: code.client_id,
      client_name: code.client_name,
      registration: code.registration,
      redirect_uri: code.redirect_uri,
      resource: code.resource,
      scope: code.scope,
      created_at: new Date(),
      last_used_at: null,
      revoked_at: null,
      restrictions: code.restrictions ?? UNRESTRICTED,
      ...(code.end_user_id ? { end_user_id: code.end_user_id } : {}),
    };
    await this.grants.insertOne(grant);
    await this.codes.updateOne({ _id: id }, { $set: { grant_id: grant._id } });
    return this.issueTokens(grant);
  }

  /**
   * The refresh_token grant with rotation: the presented token is spent, a new pair comes back. Presented again
   * by its client within the reuse window of its first use it gets that same pair again (concurrent refreshes,
   * a retried refresh whose answer was lost); after the window the reuse revokes the grant.
   */
  async refreshTokens(p: { refreshToken: string; client: OAuthClient; resource?: string; scope?: string; request?: RequestInfo }): Promise<TokenResponse> {
    const id = sha256(p.refreshToken);
    const token = await this.refresh.findOne({ _id: id });
    if (!token) throw new OAuthError('invalid_grant', 'Unknown refresh token');
    // Refused before anything is spent or revoked: another client cannot disconnect this one.
    if (token.client_id !== p.client.client_id) throw new OAuthError('invalid_grant', 'This refresh token was issued to another client');
    if (token.expires_at.getTime() < this.clock.now()) throw new OAuthError('invalid_grant', 'The refresh token expired; authorize the client again');
    const grant = await this.grants.findOne({ _id: token.grant_id });
    if (!grant || grant.revoked_at) throw new OAuthError('invalid_grant', 'This authorization was revoked; authorize the client again');
    if (isExpired(grant.restrictions, this.clock.now()))
      throw new OAuthError('invalid_grant', 'This authorization expired (its owner set an end date); authorize the client again');
    if (p.resource !== undefined && p.resource !== grant.resource)
      throw new OAuthError('invalid_target', `resource must be the one that was authorized (${grant.resource})`);
    if (p.scope !== undefined && !p.scope.split(' ').every((s) => grant.scope.split(' ').includes(s)))
      throw new OAuthError('invalid_scope', `A refresh may only narrow the scope; this authorization has "${grant.scope}"`);
    const now = this.clock.date();
    // Spent atomically: of concurrent refreshes one marks it; the others find it marked a moment ago.
    const first = await this.refresh.findOneAndUpdate({ _id: id, used_at: null }, { $set: { used_at: now } }, { returnDocument: 'before' });
    if (!first) {
      const usedAt = (await this.refresh.findOne({ _id: id }))?.used_at;
      if (!usedAt || now.getTime() - usedAt.getTime() > this.opts.reuseMs) {
        // A rotated-out token came back long after its use: it was copied. Whoever holds the newer one loses it too.
        await this.revokeForClient(grant._id, 'refresh token reused', p.request);
        throw new OAuthError(
          'invalid_grant',
          'This refresh token was already used. For safety every token of this authorization is now revoked; authorize the client again.',
        );
      }
    }
    return this.issueTokens(grant, p.refreshToken);
  }

  /** Whether a bearer token is one of our access tokens (by its prefix), so that it is checked here and not as an API key. */
  static isAccessToken(token: string): boolean {
    return token.startsWith(ACCESS_PREFIX);
  }

  /** The access token's grant when it is valid at this server, else why not (for the WWW-Authenticate error). */
  async authenticate(token: string, serverId: string): Promise<{ ok: true; principal: OAuthPrincipal } | { ok: false; reason: string }> {
    const hash = sha256(token);
    let doc = this.tokenCache.get(hash);
    if (doc === undefined) {
      doc = await this.access.findOne({ _id: hash });
      this.tokenCache.set(hash, doc);
    }
    if (!doc) return { ok: false, reason: 'The access token is not valid' };
    if (doc.expires_at.getTime() <= this.clock.now()) return { ok: false, reason: 'The access token expired' };
    // Audience: a token is for the one server it was authorized for.
    if (doc.server_id !== serverId) return { ok: false, reason: 'The access token was issued for another server' };
    const grant = await this.grant(doc.grant_id);
    if (!grant || grant.revoked_at) return { ok: false, reason: 'The access token was revoked' };
    if (isExpired(grant.restrictions, this.clock.now())) return { ok: false, reason: 'The authorization expired' };
    this.touched.touch(grant._id);
    return {
      ok: true,
      principal: { grantId: grant._id, ownerId: grant.owner_id, serverId, restrictions: grant.restrictions, endUserId: grant.end_user_id },
    };
  }

  /** RFC 7009: revokes the grant of an access or refresh token of this client; unknown tokens are ignored. */
  async revokeToken(token: string, client: OAuthClient, request?: RequestInfo): Promise<void> {
    const hash = sha256(token);
    const doc = (await this.refresh.findOne({ _id: hash })) ?? (await this.access.findOne({ _id: hash }));
    if (!doc) return;
    if (doc.client_id !== client.client_id) throw new OAuthError('unauthorized_client', 'This token was issued to another client', 400);
    await this.revokeForClient(doc.grant_id, 'revoked by the client', request);
  }

  /** The owner's grants, newest first; those one end user approved when `endUserId` is given. */
  list(ownerId: string, endUserId?: string): Promise<GrantDoc[]> {
    return this.grants.find({ owner_id: ownerId, ...(endUserId ? { end_user_id: endUserId } : {}) }, { sort: { created_at: -1 }, limit: 200 });
  }

  get(ownerId: string, grantId: string): Promise<GrantDoc | null> {
    return this.grants.findOne({ _id: grantId, owner_id: ownerId });
  }

  /** The owner changes what a connected app may do; null when it is not theirs. */
  async restrict(ownerId: string, grantId: string, restrictions: Restrictions): Promise<GrantDoc | null> {
    const grant = await this.grants.findOneAndUpdate({ _id: grantId, owner_id: ownerId }, { $set: { restrictions } });
    this.grantCache.delete(grantId);
    return grant;
  }

  /** The owner revokes one connected app; null when it is not theirs. */
  async revokeGrant(ownerId: string, grantId: string): Promise<GrantDoc | null> {
    const grant = await this.grants.findOne({ _id: grantId, owner_id: ownerId });
    if (!grant) return null;
    if (!grant.revoked_at) await this.revokeGrantById(grantId, 'revoked by the owner');
    return this.grants.findOne({ _id: grantId });
  }

  /** Every grant to a server (the server is deleted, or all its keys are revoked). */
  revokeForServer(ownerId: string, serverId: string, reason: string): Promise<number> {
    return this.revokeAll({ owner_id: ownerId, server_id: serverId }, reason);
  }

  /** Every grant an end user approved (their deletion). */
  revokeForEndUser(ownerId: string, endUserId: string): Promise<number> {
    return this.revokeAll({ owner_id: ownerId, end_user_id: endUserId }, 'its end user was deleted');
  }

  private async revokeAll(filter: Filter, reason: string): Promise<number> {
    const affected = await this.grants.find({ ...filter, revoked_at: null });
    await Promise.all(affected.map((g) => this.revokeGrantById(g._id, reason)));
    return affected.length;
  }

  /** Writes the pending last-used times: one bulk write, whatever the number of grants. */
  flush(): Promise<void> {
    return this.touched.flush();
  }

  /** Deletes expired codes and tokens (revoked grants stay listed, as revoked). */
  async sweep(): Promise<void> {
    const now = this.clock.date();
    await Promise.all([
      this.codes.deleteMany({ expires_at: { $lt: now } }),
      this.access.deleteMany({ expires_at: { $lt: now } }),
      this.refresh.deleteMany({ expires_at: { $lt: now } }),
    ]);
  }

  /**
   * A new pair: random for a code, derived from the refresh token it replaces otherwise. Each token is written
   * once ($setOnInsert): a replay of that refresh token finds the pair as the first use left it (its expiry,
   * and its refresh token spent if it was used since), and concurrent refreshes write the same documents.
   */
  private async issueTokens(grant: GrantDoc, spentRefreshToken?: string): Promise<TokenResponse> {
    const next = (prefix: string, kind: string) =>
      spentRefreshToken === undefined ? randomToken(prefix) : derivedToken(prefix, this.opts.successorSecret, `${kind}\0${spentRefreshToken}`);
    const accessToken = next(ACCESS_PREFIX, 'access');
    const refreshToken = next(REFRESH_PREFIX, 'refresh');
    const base = { grant_id: grant._id, client_id: grant.client_id, server_id: grant.server_id, owner_id: grant.owner_id };
    const now = this.clock.now();
    const refreshExpiry = new Date(now + this.opts.refreshMs);
    const access = await this.access.findOneAndUpdate(
      { _id: sha256(accessToken) },
      { $setOnInsert: { ...base, expires_at: new Date(now + this.opts.accessMs) } },
      { upsert: true },
    );
    await this.refresh.updateOne({ _id: sha256(refreshToken) }, { $setOnInsert: { ...base, expires_at: refreshExpiry, used_at: null } }, { upsert: true });
    // Sliding expiry: an authorization refreshed within its refresh lifetime stays connected for another one.
    await this.grants.updateOne({ _id: grant._id }, { $max: { idle_expires_at: refreshExpiry } });
    return {
      access_token: accessToken,
      token_type: 'Bearer',
      expires_in: Math.max(1, Math.round(((access?.expires_at.getTime() ?? now + this.opts.accessMs) - now) / 1000)),
      refresh_token: refreshToken,
      scope: grant.scope,
    };
  }

  private async grant(id: string): Promise<GrantDoc | null> {
    const cached = this.grantCache.get(id);
    if (cached !== undefined) return cached;
    const doc = await this.grants.findOne({ _id: id });
    this.grantCache.set(id, doc);
    return doc;
  }

  /** A revocation the client's own request caused, recorded in the audit trail with the client as actor. */
  private async revokeForClient(id: string, reason: string, request: RequestInfo | undefined): Promise<void> {
    const grant = await this.grants.findOne({ _id: id });
    if (!grant || grant.revoked_at) return;
    await this.revokeGrantById(id, reason);
    await this.opts.audit?.record(request, {
      action: 'grant.revoke',
      owner_id: grant.owner_id,
      target: { type: 'grant', id, name: grant.client_name },
      changes: { reason, server_id: grant.server_id },
    });
  }

  /** Each write is safe to repeat (what it did no longer matches), so each is retried after a transient failure. */
  private async revokeGrantById(id: string, reason: string): Promise<void> {
    const now = new Date();
    await retryTransient(() => this.grants.updateOne({ _id: id, revoked_at: null }, { $set: { revoked_at: now, revoked_reason: reason } }));
    // Its tokens go too, so nothing of it can be exchanged or used again.
    await Promise.all([
      retryTransient(() => this.access.deleteMany({ grant_id: id })),
      retryTransient(() => this.refresh.updateMany({ grant_id: id, used_at: null }, { $set: { used_at: now } })),
    ]);
    this.grantCache.delete(id);
  }
}
