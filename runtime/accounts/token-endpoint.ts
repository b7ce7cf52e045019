// A provider's OAuth token endpoint (RFC 6749 §4.1.3 and §6) as its provider.yaml `connect` block describes
// it: a JSON or form body, the client's id and secret in the body or as HTTP Basic, the PKCE verifier. Never
// retried (a code and a rotated refresh token are good for one use), and nothing it sends or receives that is
// a secret ever reaches a message: only the provider's error code and description, with secrets redacted.
import type { HttpClient, UpstreamResponse } from '../http/client.ts';
import { redactor } from '../engine/engine.ts';
import { ToolError } from '../tool-error.ts';
import type { ConnectSpec } from '../toolspec/types.ts';

/** An OAuth app the operator registered at a provider. */
export interface OAuthApp {
  clientId: string;
  clientSecret: string;
}

/** What a token endpoint granted. */
export interface TokenSet {
  accessToken: string;
  /** Absent when the provider issues none (Atlassian without offline_access, some Notion integrations). */
  refreshToken?: string;
  /** Seconds the access token lives, when the provider says. */
  expiresIn?: number;
  /** The answer's other top-level strings (scope, workspace_name...), for `connect.keep` and the plugins. */
  grant: Record<string, string>;
}

/**
 * Why a token request failed:
 * - `refused`: the provider refused the grant itself (invalid_grant: a spent, expired or revoked code or
 *   refresh token). Only the person can fix it, by consenting again.
 * - `app`: the provider refused the service's OAuth app (invalid_client): the operator must fix it.
 * - `failed`: no usable answer (network, 5xx, an answer that is not a token): try again later.
 */
export class TokenError extends Error {
  constructor(
    readonly kind: 'refused' | 'app' | 'failed',
    message: string,
    /** The provider's OAuth error code (invalid_grant...), when it gave one. */
    readonly code?: string,
    readonly status?: number,
  ) {
    super(message);
  }
}

/** The OAuth error codes that mean the grant is gone for good (RFC 6749 §5.2; Atlassian answers unauthorized_client for a dead refresh token too). */
const GRANT_REFUSED = new Set(['invalid_grant', 'unauthorized_client']);

export interface TokenRequestOptions {
  spec: ConnectSpec;
  /** The provider's title, for messages. */
  by: string;
  app: OAuthApp;
  /** A sandbox connection: its owner's own sandboxes answer (runtime/sandbox/). */
  sandboxOwner?: string;
  timeoutMs: number;
}

export class TokenEndpoint {
  constructor(private readonly http: HttpClient) {}

  /** The authorization code for tokens (RFC 6749 §4.1.3). */
  exchangeCode(o: TokenRequestOptions, code: string, redirectUri: string, verifier?: string): Promise<TokenSet> {
    return this.request(o, { grant_type: 'authorization_code', code, redirect_uri: redirectUri, ...(verifier ? { code_verifier: verifier } : {}) }, [code]);
  }

  /** A refresh token for new tokens (RFC 6749 §6). */
  refresh(o: TokenRequestOptions, refreshToken: string): Promise<TokenSet> {
    return this.request(o, { grant_type: 'refresh_token', refresh_token: refreshToken }, [refreshToken]);
  }

  private async request(o: TokenRequestOptions, params: Record<string, string>, secrets: string[]): Promise<TokenSet> {
    const { spec, app } = o;
    const body = spec.client_auth === 'body' ? { ...params, client_id: app.clientId, client_secret: app.clientSecret } : params;
    const headers: Record<string, string> = { accept: 'application/json' };
    if (spec.client_auth === 'basic') headers.authorization = `Basic ${Buffer.from(`${app.clientId}:${app.clientSecret}`).toString('base64')}`;
    if (spec.token_body === 'form') headers['content-type'] = 'application/x-www-form-urlencoded';
    const redact = redactor([...secrets, app.clientSecret]);
    const at = `${o.by}'s token endpoint`;
    let res: UpstreamResponse;
    try {
      res = await this.http.send({
        method: 'POST',
        url: new URL(spec.token_url),
        headers,
        body: spec.token_body === 'form' ? new URLSearchParams(body).toString() : body,
        timeoutMs: o.timeoutMs,
        retry: false,
        followRedirects: false,
        sandboxOwner: o.sandboxOwner,
      });
    } catch (err) {
      if (err instanceof ToolError) throw new TokenError('failed', `${at} could not be reached: ${redact(err.message)}`);
      throw err;
    }
    return tokenSet(res, at, redact);
  }
}

function tokenSet(res: UpstreamResponse, at: string, redact: (text: string) => string): TokenSet {
  const body = res.body && typeof res.body === 'object' && !Array.isArray(res.body) ? (res.body as Record<string, unknown>) : undefined;
  if (res.status < 200 || res.status > 299) {
    const code = typeof body?.error === 'string' ? body.error : undefined;
    const description = typeof body?.error_description === 'string' ? redact(body.error_description).slice(0, 300) : '';
    const said = code ? `${code}${description ? `: ${description}` : ''}` : `HTTP ${res.status}`;
    // 401 is the client's authentication failing (RFC 6749 §5.2; Atlassian's Auth0 says access_denied with it).
    if (res.status !== 401 && res.status >= 400 && res.status < 500 && code && GRANT_REFUSED.has(code))
      throw new TokenError('refused', `${at} refused the grant (${said})`, code, res.status);
    if (res.status === 401 || code === 'invalid_client')
      throw new TokenError('app', `${at} refused this service's OAuth app (${said}): its operator must check the app's client id and secret`, code, res.status);
    throw new TokenError('failed', `${at} answered HTTP ${res.status}${code ? ` (${said})` : ''}`, code, res.status);
  }
  const access = body?.access_token;
  const type = body?.token_type;
  if (typeof access !== 'string' || access === '' || (type !== undefined && (typeof type !== 'string' || type.toLowerCase() !== 'bearer')))
    throw new TokenError('failed', `${at} answered HTTP ${res.status} without a bearer access token`, undefined, res.status);
  const refresh = body!.refresh_token;
  const expiresIn = Number(body!.expires_in);
  const grant = Object.fromEntries(
    Object.entries(body!).filter(([k, v]) => typeof v === 'string' && !['access_token', 'refresh_token', 'id_token', 'token_type'].includes(k)),
  ) as Record<string, string>;
  return {
    accessToken: access,
    refreshToken: typeof refresh === 'string' && refresh !== '' ? refresh : undefined,
    expiresIn: Number.isFinite(expiresIn) && expiresIn > 0 ? expiresIn : undefined,
    grant,
  };
}
