// Every choice of the OAuth sandboxes that no primary source confirmed (connections.md marks them
// *(unverified)*, or says nothing): each is decided here, once, with why; change it here when a primary source
// says otherwise. What the sandboxes do beyond this file follows the documented contracts. The consent pages'
// wording is ours (a person reads it, no client parses it).
//
// Behaviours decided here but built into the shared machinery (sandboxes/oauth/grants.ts):
// - Atlassian: a refresh token reused inside the 10-minute leeway gets a new pair of the same chain, and the
//   pair issued at its first use stays valid too (Auth0's reuse interval works so; the notice only says the
//   reuse is "tolerated"); a reuse at exactly 10:00 is inside.
// - Atlassian: family revocation (a reuse after the leeway) ends the grant's refresh tokens only; access tokens
//   already issued are JWTs and work until they expire. Removing the app or changing the password ends them too.
// - Notion and Supabase: a spent refresh token is refused at once (no leeway), and only that request.
// - All three: a code is spent by its first use, even one refused for a wrong redirect_uri or PKCE verifier.
import { randomBytes, randomUUID } from 'node:crypto';
import { HOUR, MINUTE } from './clock.ts';

/** A token endpoint's answer: status and JSON body. */
export interface ErrorAnswer {
  status: number;
  body: { error: string; error_description: string };
}

const oauthError = (status: number, error: string, description: string): ErrorAnswer => ({ status, body: { error, error_description: description } });

// --- Atlassian: auth.atlassian.com runs on Auth0, so its errors are Auth0's `{error, error_description}`, statuses
// as Auth0 gives them (403 for refused grants, which connections.md confirms for refresh tokens).

export const ATLASSIAN = {
  /** How long an authorization code works: Auth0's default. */
  codeTtlMs: 10 * MINUTE,
  errors: {
    /** Wrong or unknown client credentials. */
    badClient: oauthError(401, 'access_denied', 'Unauthorized'),
    /** A spent, unknown, expired or foreign authorization code. */
    badCode: oauthError(403, 'invalid_grant', 'Invalid authorization code'),
    badRedirect: oauthError(403, 'invalid_grant', 'The redirect_uri parameter does not match the one used in the authorization request'),
    missing: (name: string) => oauthError(400, 'invalid_request', `Missing required parameter: ${name}`),
    /** Atlassian documents a JSON body only (Auth0 may take a form too): anything else is refused, so a client sticks to the documented form. */
    notJson: oauthError(400, 'invalid_request', 'The request body must be JSON (Content-Type: application/json)'),
    unsupportedGrant: (type: string) => oauthError(403, 'unsupported_grant_type', `Unsupported grant type: ${type}`),
  },
  /** Authorize errors sent back to the app's registered redirect_uri (`error`, `error_description`). */
  redirectErrors: {
    unsupportedResponseType: (type: string) => ['unsupported_response_type', `Unsupported response type: ${type}`] as const,
    /** An audience other than api.atlassian.com: Auth0's answer for an unknown API. */
    unknownAudience: (audience: string) => ['access_denied', `Service not found: ${audience}`] as const,
    missingScope: ['invalid_request', 'Missing required parameter: scope'] as const,
    /** The Cancel button. */
    cancelled: ['access_denied', 'User did not authorize the request'] as const,
  },
  /** api.atlassian.com's answers (the short JSON client logs show; the route-to-scope map is ours, scopes.ts). */
  gateway: {
    /** An expired, revoked or unknown access token, or a site the grant does not cover. */
    unauthorized: { code: 401, message: 'Unauthorized' },
    scopeMismatch: { code: 401, message: 'Unauthorized; scope does not match' },
    unknownSite: { code: 404, message: 'Cannot find a site with this cloud id' },
    notFound: { code: 404, message: 'Not Found' },
  },
  /**
   * An access token is a JWT (as Atlassian's are: RS256, issuer auth.atlassian.com, the account as subject, the
   * app as audience, its scopes, exp), so a client that reads `exp` from it can; the signature is random bytes
   * (no client can verify it). Refresh tokens are opaque.
   */
  accessToken(grant: { clientId: string; subject: string; scopes: string[] }, issuedAt: number, expiresAt: number): string {
    const part = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
    const seconds = (ms: number) => Math.floor(ms / 1000);
    const claims = {
      jti: randomUUID(),
      sub: grant.subject,
      iss: 'https://auth.atlassian.com',
      aud: grant.clientId,
      client_id: grant.clientId,
      scope: grant.scopes.join(' '),
      nbf: seconds(issuedAt),
      iat: seconds(issuedAt),
      exp: seconds(expiresAt),
    };
    return `${part({ kid: 'auth.atlassian.io/sandbox', alg: 'RS256' })}.${part(claims)}.${randomBytes(64).toString('base64url')}`;
  },
  /** accessible-resources lists the granted scopes without `offline_access`, which is no product's scope. */
  resourceScopes: (scopes: readonly string[]) => scopes.filter((s) => s !== 'offline_access'),
};

// --- Notion

export const NOTION = {
  /**
   * How long an access token works. Notion's SDK has no `expires_in`; an hour is the common lifetime among
   * providers with refresh tokens, and short enough that a client meets the 401 and refreshes. A test control.
   */
  accessTokenTtlMs: HOUR,
  codeTtlMs: 10 * MINUTE,
  /** Token formats: opaque to clients; `ntn_` as Notion's newer tokens begin. */
  accessTokenPrefix: 'ntn_',
  refreshTokenPrefix: 'nrt_',
  /** The workspace's icon in the token answer (Notion gives an emoji or a URL). */
  workspaceIcon: '🧪',
  /**
   * Every authorization mints a new pair (reported from 2026-06-08 on) and the pairs of earlier authorizations of
   * the same integration in the workspace stop working, so a client that keeps an old pair finds out.
   */
  reauthorizationEndsEarlierPairs: true,
  /** POST /v1/oauth/revoke ends the whole authorization (every token of it), not only the token sent. */
  revokeEndsAuthorization: true,
  /** The page picks at consent are the integration's top-level pages from then on (unticked = no longer shared). */
  consentReplacesShares: true,
  /** The `scope` introspect reports for a live token: the capabilities of an integration that reads and writes content. */
  introspectScope: 'read_content update_content insert_content',
  /** Token, revoke and introspect errors: the OAuth pair (connections.md confirms `400 invalid_grant`). */
  errors: {
    badClient: oauthError(401, 'invalid_client', 'Invalid client credentials.'),
    notJson: oauthError(400, 'invalid_request', 'Error parsing JSON body.'),
    missing: (name: string) => oauthError(400, 'invalid_request', `${name} should be defined.`),
    badCode: oauthError(400, 'invalid_grant', 'Invalid code.'),
    redirectRequired: oauthError(400, 'invalid_request', 'redirect_uri should be defined: the authorization request carried one.'),
    redirectMismatch: oauthError(400, 'invalid_grant', 'redirect_uri does not match the one of the authorization request.'),
    redirectNotAllowed: oauthError(400, 'invalid_request', 'redirect_uri should not be present: the authorization request had none.'),
    badRefresh: oauthError(400, 'invalid_grant', 'Invalid refresh token.'),
    unsupportedGrant: (type: string) => oauthError(400, 'unsupported_grant_type', `Unsupported grant_type: ${type}.`),
  },
};

// --- Supabase

export const SUPABASE = {
  /** How long an access token works (clients in the wild see expires_in 3600; unconfirmed). A test control. */
  accessTokenTtlMs: HOUR,
  codeTtlMs: 10 * MINUTE,
  /** `code_challenge_method` in any case (older docs spell it `s256`). */
  challengeMethodAnyCase: true,
  /** The client may also authenticate with client_id and client_secret in the form (RFC 6749 §2.3.1; a Rust client does). */
  clientInForm: true,
  /** api-keys without `reveal=true`: a secret key shows this many characters, then dots. */
  maskedSecretVisibleChars: 15,
  /** Token-endpoint errors: the OAuth pair of RFC 6749. */
  errors: {
    badClient: oauthError(401, 'invalid_client', 'Invalid client credentials'),
    notForm: oauthError(400, 'invalid_request', 'The body must be application/x-www-form-urlencoded'),
    missing: (name: string) => oauthError(400, 'invalid_request', `${name} is required`),
    badCode: oauthError(400, 'invalid_grant', 'Invalid authorization code'),
    badRedirect: oauthError(400, 'invalid_grant', 'redirect_uri does not match the authorization request'),
    verifierMissing: oauthError(400, 'invalid_grant', 'code_verifier is required'),
    verifierMismatch: oauthError(400, 'invalid_grant', 'code_verifier does not match the code_challenge'),
    badRefresh: oauthError(400, 'invalid_grant', 'Invalid refresh token'),
    unsupportedGrant: (type: string) => oauthError(400, 'unsupported_grant_type', `Unsupported grant_type: ${type}`),
  },
  /** Authorize errors sent back to the registered redirect_uri. */
  redirectErrors: {
    unsupportedResponseType: ['unsupported_response_type', 'response_type must be code'] as const,
    badChallengeMethod: ['invalid_request', 'code_challenge_method must be S256'] as const,
    badChallenge: ['invalid_request', 'code_challenge must be 43 to 128 characters of base64url'] as const,
  },
  /** Management API answers. */
  api: {
    unauthorized: { message: 'Unauthorized' },
    projectNotFound: { message: 'Project not found' },
  },
};

// --- all three

/**
 * Authorize requests naming an unknown client or an unregistered redirect_uri get a page saying so, never a
 * redirect (the brief's rule for Atlassian, applied to all three); Notion shows every problem of the request on
 * a page, Supabase also the 4 kB limit of redirect_uri + state.
 */
export const CONSENT = {
  /** How long the consent page's form stays valid before the user must start again from the app. */
  requestTtlMs: 30 * MINUTE,
};
