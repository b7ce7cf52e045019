// Every choice of the OAuth sandboxes that no primary source confirmed (/work/shared/connections.md marks them
// *(unverified)*, or says nothing). Each is decided here, once, with why this value; change it here when a
// primary source says otherwise. Everything else in sandboxes/atlassian, sandboxes/notion/oauth.ts and
// sandboxes/supabase follows the documented contracts.
import { HOUR, MINUTE } from './clock.ts';

// --- Atlassian (auth.atlassian.com runs on Auth0: its error bodies are Auth0's, `{error, error_description}`)

/** How long an authorization code works: Auth0's documented default, and short enough to test code expiry. */
export const ATLASSIAN_CODE_TTL_MS = 10 * MINUTE;

/**
 * A refresh token reused inside the 10-minute leeway gets a new access token and a new refresh token of the same
 * chain; the refresh token issued at the first use stays valid too (Auth0's reuse interval works this way; the
 * notice only says the reuse is "tolerated"). Reuse at exactly 10:00 still counts as inside.
 */
export const ATLASSIAN_LEEWAY_REUSE_GIVES_NEW_PAIR = true;

/**
 * Family revocation (reuse outside the leeway) ends the grant's refresh tokens only: access tokens already issued
 * are JWTs and keep working until they expire. Revoking the app or changing the password ends those as well.
 */
export const ATLASSIAN_FAMILY_REVOCATION_KEEPS_ACCESS_TOKENS = true;

/** Wrong or unknown client credentials at the token endpoint: Auth0's answer. */
export const ATLASSIAN_BAD_CLIENT = { status: 401, body: { error: 'access_denied', error_description: 'Unauthorized' } };

/** A spent, unknown, expired or foreign authorization code: Auth0's answer. */
export const ATLASSIAN_BAD_CODE = { status: 403, body: { error: 'invalid_grant', error_description: 'Invalid authorization code' } };

/** A redirect_uri at the token endpoint that differs from the authorize request's: Auth0's wording. */
export const ATLASSIAN_BAD_REDIRECT = {
  status: 403,
  body: { error: 'invalid_grant', error_description: 'The redirect_uri parameter does not match the one used in the authorization request' },
};

/** A token request without one of its parameters (status and text as Auth0 answers a malformed request). */
export const atlassianMissing = (name: string) => ({
  status: 400,
  body: { error: 'invalid_request', error_description: `Missing required parameter: ${name}` },
});

/**
 * A token request whose body is not JSON. Atlassian documents JSON only (Auth0 may take a form too); the sandbox
 * refuses anything else so a client sticks to the documented form.
 */
export const ATLASSIAN_NOT_JSON = {
  status: 400,
  body: { error: 'invalid_request', error_description: 'The request body must be JSON (Content-Type: application/json)' },
};

/** An expired, revoked or unknown access token at api.atlassian.com (the gateway's short JSON, seen in client logs). */
export const ATLASSIAN_GATEWAY_UNAUTHORIZED = { code: 401, message: 'Unauthorized' };

/** A token without the scope an endpoint needs (the gateway's text is confirmed by client reports; the scope map is ours). */
export const ATLASSIAN_SCOPE_MISMATCH = { code: 401, message: 'Unauthorized; scope does not match' };

/** A cloud id the grant does not cover, or that does not exist, at /ex/jira/<cloudId>. */
export const ATLASSIAN_UNKNOWN_SITE = { code: 404, message: 'Cannot find a site with this cloud id' };

/** The Cancel button: Auth0's description next to `error=access_denied`. */
export const ATLASSIAN_CANCEL_DESCRIPTION = 'User did not authorize the request';

/** accessible-resources lists the granted scopes without `offline_access` (it is not a product scope). */
export const ATLASSIAN_RESOURCE_SCOPES_OMIT_OFFLINE = true;

// --- Notion

/**
 * How long a Notion OAuth access token works. Notion's SDK has no `expires_in`; an hour is the common lifetime
 * among OAuth providers with refresh tokens, and short enough that a client meets a 401 and must refresh.
 */
export const NOTION_ACCESS_TOKEN_TTL_MS = HOUR;

/** How long a Notion authorization code works. */
export const NOTION_CODE_TTL_MS = 10 * MINUTE;

/**
 * Every authorization mints a new token pair (reported for 2026-06-08 on) and the pairs of earlier authorizations
 * of the same integration in the workspace stop working, so a client that keeps an old pair finds out.
 */
export const NOTION_REAUTHORIZATION_ENDS_EARLIER_PAIRS = true;

/**
 * At consent the user's page picks are the integration's top-level pages from then on: a page shared before and
 * unticked now is no longer shared (the page picker shows what is shared, ticked).
 */
export const NOTION_CONSENT_REPLACES_SHARES = true;

/** POST /v1/oauth/revoke ends the whole authorization (every token of it), not only the token sent. */
export const NOTION_REVOKE_ENDS_AUTHORIZATION = true;

/** The `scope` introspect reports for an active token: the capabilities of a public integration that reads and writes content. */
export const NOTION_INTROSPECT_SCOPE = 'read_content update_content insert_content';

/** Token-endpoint errors: the OAuth pair `{error, error_description}` (connections.md confirms only `error`). */
export const notionOAuthError = (status: number, error: string, description: string) => ({
  status,
  body: { error, error_description: description },
});

/** Wrong or missing Basic credentials at the token, revoke and introspect endpoints. */
export const NOTION_BAD_CLIENT = notionOAuthError(401, 'invalid_client', 'Invalid client credentials.');

// --- Supabase

/** How long a Supabase OAuth access token works (clients seen in the wild get expires_in 3600... unconfirmed). */
export const SUPABASE_ACCESS_TOKEN_TTL_MS = HOUR;

/** How long a Supabase authorization code works. */
export const SUPABASE_CODE_TTL_MS = 10 * MINUTE;

/** Token-endpoint errors: the OAuth pair, as the Management API's OAuth server is documented to follow RFC 6749. */
export const supabaseOAuthError = (status: number, error: string, description: string) => ({
  status,
  body: { error, error_description: description },
});

/** An invalid, expired or revoked bearer at the Management API. */
export const SUPABASE_UNAUTHORIZED = { message: 'Unauthorized' };

/** Without `reveal=true`, api-keys masks secret keys: their prefix, then dots (as the dashboard shows them). */
export const SUPABASE_MASKED_SECRET_VISIBLE_CHARS = 15;

/** `code_challenge_method` is matched without regard to case (older docs spell it `s256`). */
export const SUPABASE_CHALLENGE_METHOD_ANY_CASE = true;

// --- all three

/** How long the consent page's form stays valid before the user must start again from the app. */
export const CONSENT_REQUEST_TTL_MS = 30 * MINUTE;
