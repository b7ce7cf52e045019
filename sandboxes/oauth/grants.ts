// The token machinery the three OAuth sandboxes share: grants (a user's consent to an app), single-use codes,
// access tokens, and refresh tokens with rotation. Each provider gives its own policy (lifetimes, the reuse
// leeway, what a reuse outside it does, idle and absolute expiry) and its own token formats.
import { randomBytes, randomUUID } from 'node:crypto';
import type { SandboxClock } from './clock.ts';
import type { GrantView } from './oauth.ts';

export interface TokenPolicy {
  accessTtlMs: number;
  codeTtlMs: number;
  /** A spent refresh token still works this long after its first use (Atlassian: 10 minutes); 0 = never. */
  reuseLeewayMs: number;
  /** A reuse after the leeway ends every refresh token of the grant (Atlassian), not only that request. */
  reuseRevokesGrantRefreshTokens: boolean;
  /** A refresh token not used for this long expires (Atlassian: 90 days). */
  refreshIdleMs?: number;
  /** A chain of refresh tokens ends this long after the authorization that started it (Atlassian: 365 days). */
  refreshAbsoluteMs?: number;
  /** A new access token for the grant, valid from `issuedAt` to `expiresAt` (the provider's format). */
  newAccessToken(grant: Grant<unknown>, issuedAt: number, expiresAt: number): string;
  newRefreshToken(): string;
}

export interface Grant<D> {
  id: string;
  clientId: string;
  subject: string;
  scopes: string[];
  /** What the provider keeps with it: sites, shared pages, an organization... */
  data: D;
  createdAt: number;
  revoked: boolean;
}

/** What the authorize request bound the code to. */
export interface CodeBinding {
  /** The redirect_uri the authorize request carried (undefined when it had none). */
  redirectUri: string | undefined;
  codeChallenge?: string;
}

export interface CodeRecord<D> extends CodeBinding {
  grant: Grant<D>;
  issuedAt: number;
  used: boolean;
}

export interface IssuedTokens {
  accessToken: string;
  /** Absent when the grant gets no refresh token (Atlassian without offline_access). */
  refreshToken?: string;
  /** Seconds. */
  expiresIn: number;
}

/** Why a refresh token or an access token is refused. */
export type Refusal = 'unknown' | 'expired' | 'revoked' | 'reused';

interface RefreshRecord<D> {
  grant: Grant<D>;
  /** When the authorization that started this chain happened (absolute expiry counts from it). */
  chainStart: number;
  issuedAt: number;
  /** When it was first exchanged (rotated); a later exchange is a reuse. */
  spentAt?: number;
  revoked: boolean;
}

interface AccessRecord<D> {
  grant: Grant<D>;
  issuedAt: number;
  expiresAt: number;
  revoked: boolean;
}

export const randomToken = (bytes = 32): string => randomBytes(bytes).toString('base64url');

export class GrantBook<D> {
  private readonly all: Grant<D>[] = [];
  private readonly codes = new Map<string, CodeRecord<D>>();
  private readonly refreshTokens = new Map<string, RefreshRecord<D>>();
  private readonly accessTokens = new Map<string, AccessRecord<D>>();

  constructor(
    private readonly clock: SandboxClock,
    private readonly policy: TokenPolicy,
  ) {}

  /** Every grant so far (revoked ones too), oldest first. */
  get grants(): readonly Grant<D>[] {
    return this.all;
  }

  /** The live grant of this client and subject that `same` accepts, else a new one. */
  grant(clientId: string, subject: string, scopes: string[], data: D, same: (g: Grant<D>) => boolean = () => false): Grant<D> {
    const existing = this.all.find((g) => !g.revoked && g.clientId === clientId && g.subject === subject && same(g));
    if (existing) {
      existing.scopes = scopes;
      existing.data = data;
      return existing;
    }
    const grant: Grant<D> = { id: randomUUID(), clientId, subject, scopes, data, createdAt: this.clock.now(), revoked: false };
    this.all.push(grant);
    return grant;
  }

  issueCode(grant: Grant<D>, binding: CodeBinding): string {
    const code = randomToken(24);
    this.codes.set(code, { ...binding, grant, issuedAt: this.clock.now(), used: false });
    return code;
  }

  /**
   * The code's record when it is live, issued to `clientId`, and not used yet; it is then used up. A spent,
   * expired, foreign or unknown code gives undefined (and a foreign one stays usable by its own client).
   */
  takeCode(code: string, clientId: string): CodeRecord<D> | undefined {
    const record = this.codes.get(code);
    if (!record || record.grant.clientId !== clientId) return undefined;
    if (record.used || record.grant.revoked || this.clock.now() - record.issuedAt >= this.policy.codeTtlMs) {
      record.used = true;
      return undefined;
    }
    record.used = true;
    return record;
  }

  /** A new access token, and a refresh token when `withRefresh` (a chain that started at `chainStart`, default now). */
  issue(grant: Grant<D>, withRefresh: boolean, chainStart = this.clock.now()): IssuedTokens {
    const now = this.clock.now();
    const expiresAt = now + this.policy.accessTtlMs;
    const accessToken = this.policy.newAccessToken(grant, now, expiresAt);
    this.accessTokens.set(accessToken, { grant, issuedAt: now, expiresAt, revoked: false });
    const issued: IssuedTokens = { accessToken, expiresIn: Math.round(this.policy.accessTtlMs / 1000) };
    if (withRefresh) {
      issued.refreshToken = this.policy.newRefreshToken();
      this.refreshTokens.set(issued.refreshToken, { grant, chainStart, issuedAt: now, revoked: false });
    }
    return issued;
  }

  /** Exchanges a refresh token of `clientId` under the policy's rotation rules. */
  refresh(token: string, clientId: string): { tokens: IssuedTokens; grant: Grant<D> } | { refused: Refusal } {
    const record = this.refreshTokens.get(token);
    if (!record || record.grant.clientId !== clientId) return { refused: 'unknown' };
    if (record.revoked || record.grant.revoked) return { refused: 'revoked' };
    const refusal = this.expiry(record);
    if (refusal) return { refused: refusal };
    const now = this.clock.now();
    if (record.spentAt !== undefined) {
      if (!this.inLeeway(record.spentAt)) {
        if (this.policy.reuseRevokesGrantRefreshTokens) this.revokeRefreshTokens(record.grant);
        else record.revoked = true;
        return { refused: 'reused' };
      }
    } else {
      record.spentAt = now;
    }
    return { tokens: this.issue(record.grant, true, record.chainStart), grant: record.grant };
  }

  /** The grant behind a live access token, or why it is refused. */
  access(token: string): { grant: Grant<D> } | { refused: Refusal } {
    const record = this.accessTokens.get(token);
    if (!record) return { refused: 'unknown' };
    if (record.revoked || record.grant.revoked) return { refused: 'revoked' };
    if (this.clock.now() >= record.expiresAt) return { refused: 'expired' };
    return { grant: record.grant };
  }

  /** The grant a token (access or refresh, live or not) belongs to. */
  grantOf(token: string): Grant<D> | undefined {
    return (this.accessTokens.get(token) ?? this.refreshTokens.get(token))?.grant;
  }

  /** A token (access or refresh) of `clientId` that would be honoured now, with when it was issued (RFC 7662). */
  introspect(token: string, clientId: string): { active: false } | { active: true; issuedAt: number; grant: Grant<D> } {
    const access = this.accessTokens.get(token);
    if (access?.grant.clientId === clientId && 'grant' in this.access(token)) return { active: true, issuedAt: access.issuedAt, grant: access.grant };
    const refresh = this.refreshTokens.get(token);
    if (refresh?.grant.clientId === clientId && this.honoured(refresh)) return { active: true, issuedAt: refresh.issuedAt, grant: refresh.grant };
    return { active: false };
  }

  /** Ends a grant: its codes, access tokens and refresh tokens are refused from now on. */
  revokeGrant(grant: Grant<D>): void {
    grant.revoked = true;
  }

  /** Ends every grant of a client (every client when undefined). */
  revokeClient(clientId?: string): void {
    for (const grant of this.all) if (clientId === undefined || grant.clientId === clientId) grant.revoked = true;
  }

  /** Ends every grant of a subject (a password change). */
  revokeSubject(subject: string): void {
    for (const grant of this.all) if (grant.subject === subject) grant.revoked = true;
  }

  /** Ends every token issued so far for the grant, which itself stays (new authorizations of it still work). */
  revokeTokens(grant: Grant<D>): void {
    this.revokeRefreshTokens(grant);
    for (const record of this.accessTokens.values()) if (record.grant === grant) record.revoked = true;
  }

  views(): GrantView[] {
    const now = this.clock.now();
    return this.all.map((g) => ({
      id: g.id,
      clientId: g.clientId,
      subject: g.subject,
      scopes: [...g.scopes],
      createdAt: g.createdAt,
      revoked: g.revoked,
      liveRefreshTokens: [...this.refreshTokens.values()].filter((r) => r.grant === g && this.honoured(r)).length,
      liveAccessTokens: [...this.accessTokens.values()].filter((a) => a.grant === g && !a.revoked && !g.revoked && now < a.expiresAt).length,
    }));
  }

  private revokeRefreshTokens(grant: Grant<D>): void {
    for (const record of this.refreshTokens.values()) if (record.grant === grant) record.revoked = true;
  }

  private expiry(record: RefreshRecord<D>): Refusal | undefined {
    const now = this.clock.now();
    const { refreshIdleMs, refreshAbsoluteMs } = this.policy;
    if (refreshIdleMs !== undefined && now - record.issuedAt > refreshIdleMs) return 'expired';
    if (refreshAbsoluteMs !== undefined && now - record.chainStart > refreshAbsoluteMs) return 'expired';
    return undefined;
  }

  private honoured(record: RefreshRecord<D>): boolean {
    if (record.revoked || record.grant.revoked || this.expiry(record)) return false;
    return record.spentAt === undefined || this.inLeeway(record.spentAt);
  }

  /** Whether a token spent at `spentAt` may still be used (never without a leeway, even in the same millisecond). */
  private inLeeway(spentAt: number): boolean {
    return this.policy.reuseLeewayMs > 0 && this.clock.now() - spentAt <= this.policy.reuseLeewayMs;
  }
}
