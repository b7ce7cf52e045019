// The authorization request (RFC 6749 section 4.1.1 with PKCE and RFC 8707's resource), checked the same way
// when the consent page is shown and when the owner's decision comes back (the page carries the request).
import { isolated } from '../names.ts';
import { type OAuthClient, type OAuthClients } from './clients.ts';
import { OAuthError } from './errors.ts';
import { SCOPE } from './grants.ts';
import { SERVER_ID_PATTERN } from '../servers/servers.ts';

export interface AuthorizationRequest {
  client: OAuthClient;
  redirectUri: string;
  codeChallenge: string;
  resource: string;
  scope: string;
  state?: string;
  /** The server the resource names; null when the client asked for the service as a whole (the owner picks). */
  serverId: string | null;
}

/** The request's own parameters, as the consent page carries them back. */
export const REQUEST_FIELDS = ['response_type', 'client_id', 'redirect_uri', 'code_challenge', 'code_challenge_method', 'resource', 'scope', 'state'] as const;

export type Checked =
  | { ok: true; request: AuthorizationRequest }
  /** Client or redirect URI unusable: shown to the person, never sent to a redirect URI (section 4.1.2.1); `status` when not 400. */
  | { ok: false; page: string; status?: number }
  /** Anything else: sent back to the client's redirect URI. */
  | { ok: false; redirectTo: string };

/** The canonical URL of a server (RFC 8707 resource, RFC 9728 `resource`). */
export const serverResource = (publicUrl: string, serverId: string) => `${publicUrl}/mcp/${serverId}`;

/** Checks an authorization request coming from `address` (client ID metadata document fetches are counted per address). */
export async function checkAuthorizationRequest(params: Record<string, unknown>, clients: OAuthClients, publicUrl: string, address: string): Promise<Checked> {
  const one = (name: string): string | undefined => {
    const v = params[name];
    if (Array.isArray(v)) throw new OAuthError('invalid_request', `${name} is given more than once`);
    return typeof v === 'string' && v !== '' ? v : undefined;
  };
  let clientId: string | undefined;
  let redirectUri: string | undefined;
  let client: OAuthClient;
  try {
    clientId = one('client_id');
    redirectUri = one('redirect_uri');
    if (!clientId) return { ok: false, page: 'The request has no client_id: the application that sent you here did not say who it is.' };
    client = await clients.find(clientId, address);
  } catch (err) {
    if (err instanceof OAuthError) return { ok: false, page: err.description, ...(err.status === 429 ? { status: 429 } : {}) };
    throw err;
  }
  // Exact match against a registered URI; with only one registered, it may be left out.
  if (!redirectUri && client.redirect_uris.length === 1) redirectUri = client.redirect_uris[0];
  if (!redirectUri)
    return {
      ok: false,
      page: `The request has no redirect_uri and ${isolated(client.client_name)} registered several: the application must say which one to use.`,
    };
  if (!client.redirect_uris.includes(redirectUri))
    return {
      ok: false,
      page: `The redirect_uri ${redirectUri} is not one that ${isolated(client.client_name)} registered, so you are not sent there. This can be an attempt to steal your authorization.`,
    };

  let state: string | undefined;
  const back = (code: string, description: string): Checked => ({
    ok: false,
    redirectTo: withParams(redirectUri!, { error: code, error_description: description, state, iss: publicUrl }),
  });
  try {
    state = one('state');
    if (one('response_type') !== 'code') return back('unsupported_response_type', 'response_type must be "code" (the authorization code flow is the only one)');
    const challenge = one('code_challenge');
    if (!challenge) return back('invalid_request', 'code_challenge is required (PKCE)');
    if (one('code_challenge_method') !== 'S256') return back('invalid_request', 'code_challenge_method must be "S256" ("plain" is not accepted)');
    if (!/^[A-Za-z0-9_-]{43}$/.test(challenge)) return back('invalid_request', 'code_challenge must be the base64url SHA-256 of the verifier (43 characters)');
    const resource = one('resource');
    if (!resource) return back('invalid_target', `resource is required: the URL of the MCP server, e.g. ${serverResource(publicUrl, 'SERVER_ID')}`);
    const serverId = serverOf(resource, publicUrl);
    if (serverId === undefined) return back('invalid_target', `resource must be an MCP server of this service: ${serverResource(publicUrl, '{server_id}')}`);
    const scope = one('scope') ?? SCOPE;
    const unknown = scope.split(' ').filter((s) => s && s !== SCOPE);
    if (unknown.length) return back('invalid_scope', `Unknown scope ${unknown.join(' ')}; the only scope is ${SCOPE}`);
    return { ok: true, request: { client, redirectUri, codeChallenge: challenge, resource, scope: SCOPE, state, serverId } };
  } catch (err) {
    if (err instanceof OAuthError) return back(err.code, err.description);
    throw err;
  }
}

/** The server id a resource URL names; null for the service's /mcp as a whole; undefined when it is not ours. */
function serverOf(resource: string, publicUrl: string): string | null | undefined {
  if (resource === `${publicUrl}/mcp`) return null;
  const prefix = `${publicUrl}/mcp/`;
  if (!resource.startsWith(prefix)) return undefined;
  const id = resource.slice(prefix.length);
  return SERVER_ID_PATTERN.test(id) ? id : undefined;
}

/** The URL with query parameters added (undefined ones left out), keeping its own. */
export function withParams(url: string, params: Record<string, string | undefined>): string {
  const u = new URL(url);
  for (const [k, v] of Object.entries(params)) if (v !== undefined) u.searchParams.set(k, v);
  return u.toString();
}
