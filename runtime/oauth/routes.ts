// The authorization server's endpoints and the discovery documents (the consent page is the dashboard's,
// the owner's decision an /api route). Answers follow the RFCs: JSON metadata, form-encoded requests to the
// token and revocation endpoints, `{error, error_description}` failures, `Cache-Control: no-store` on tokens.
import Router from '@koa/router';
import type { Context, Next } from 'koa';
import type { SignInLimits } from '../access/sign-in-limits.ts';
import { requestInfo, setActor } from '../audit/request-context.ts';
import { BodyTooLargeError, readBody } from '../http/body.ts';
import { serverResource } from './authorize.ts';
import { type OAuthClients, TOKEN_AUTH_METHODS } from './clients.ts';
import { OAuthError } from './errors.ts';
import { type OAuthGrants, SCOPE } from './grants.ts';

export interface OAuthRouteDeps {
  clients: OAuthClients;
  grants: OAuthGrants;
  signInLimits: SignInLimits;
  site: { publicUrl: string };
  maxBodyBytes: number;
}

export const RESOURCE_NAME = 'Tool Server';

/** Where a server's protected resource metadata is (RFC 9728 section 3.1: well-known inserted before the path). */
export const resourceMetadataUrl = (publicUrl: string, serverId: string) => `${publicUrl}/.well-known/oauth-protected-resource/mcp/${serverId}`;

export function createOAuthRouter(d: OAuthRouteDeps): Router {
  const router = new Router();
  router.use(cors, oauthErrors);

  // RFC 9728. Answered for any server id, existing or not: the document says nothing about an owner's servers.
  const protectedResource = (resource: string) => ({
    resource,
    authorization_servers: [d.site.publicUrl],
    scopes_supported: [SCOPE],
    bearer_methods_supported: ['header'],
    resource_name: RESOURCE_NAME,
    resource_documentation: `${d.site.publicUrl}/`,
  });
  router.get('/.well-known/oauth-protected-resource/mcp/:serverId', (ctx) => {
    ctx.body = protectedResource(serverResource(d.site.publicUrl, ctx.params.serverId));
  });
  router.get('/.well-known/oauth-protected-resource', (ctx) => {
    ctx.body = protectedResource(`${d.site.publicUrl}/mcp`);
  });

  // RFC 8414.
  router.get('/.well-known/oauth-authorization-server', (ctx) => {
    const base = d.site.publicUrl;
    ctx.body = {
      issuer: base,
      authorization_endpoint: `${base}/oauth/authorize`,
      token_endpoint: `${base}/oauth/token`,
      registration_endpoint: `${base}/oauth/register`,
      revocation_endpoint: `${base}/oauth/revoke`,
      scopes_supported: [SCOPE],
      response_types_supported: ['code'],
      response_modes_supported: ['query'],
      grant_types_supported: ['authorization_code', 'refresh_token'],
      code_challenge_methods_supported: ['S256'],
      token_endpoint_auth_methods_supported: TOKEN_AUTH_METHODS,
      revocation_endpoint_auth_methods_supported: TOKEN_AUTH_METHODS,
      client_id_metadata_document_supported: true,
      authorization_response_iss_parameter_supported: true,
      service_documentation: `${base}/`,
    };
  });

  // RFC 7591.
  router.post('/oauth/register', async (ctx) => {
    const wait = await d.signInLimits.register(ctx.ip);
    if (wait) {
      ctx.set('Retry-After', String(wait));
      throw new OAuthError('temporarily_unavailable', `Too many client registrations from this address; try again in ${wait} s`, 429);
    }
    if (!ctx.is('application/json')) throw new OAuthError('invalid_client_metadata', 'The registration request must be JSON (Content-Type: application/json)');
    let meta: unknown;
    try {
      meta = JSON.parse(await readBody(ctx.req, 16 * 1024));
    } catch (err) {
      throw new OAuthError(
        'invalid_client_metadata',
        err instanceof BodyTooLargeError ? 'The client metadata is larger than 16 KB' : `The client metadata is not valid JSON: ${(err as Error).message}`,
      );
    }
    if (meta === null || typeof meta !== 'object' || Array.isArray(meta))
      throw new OAuthError('invalid_client_metadata', 'The client metadata must be a JSON object');
    ctx.status = 201;
    noStore(ctx);
    ctx.body = await d.clients.register(meta as Record<string, unknown>);
  });

  // RFC 6749 section 3.2 with PKCE (RFC 7636) and resource indicators (RFC 8707).
  router.post('/oauth/token', async (ctx) => {
    const form = await formBody(ctx, d.maxBodyBytes);
    const client = await d.clients.authenticate(clientCredentials(ctx, form), ctx.ip);
    setActor(ctx, { type: 'oauth_client', id: client.client_id, name: client.client_name });
    const resource = form.get('resource') ?? undefined;
    noStore(ctx);
    switch (form.get('grant_type')) {
      case 'authorization_code': {
        const code = form.get('code');
        if (!code) throw new OAuthError('invalid_request', 'code is required');
        ctx.body = await d.grants.redeemCode({
          code,
          client,
          redirectUri: form.get('redirect_uri') ?? undefined,
          verifier: form.get('code_verifier') ?? undefined,
          resource,
          request: requestInfo(ctx),
        });
        return;
      }
      case 'refresh_token': {
        const refreshToken = form.get('refresh_token');
        if (!refreshToken) throw new OAuthError('invalid_request', 'refresh_token is required');
        ctx.body = await d.grants.refreshTokens({ refreshToken, client, resource, scope: form.get('scope') ?? undefined, request: requestInfo(ctx) });
        return;
      }
      case null:
        throw new OAuthError('invalid_request', 'grant_type is required');
      default:
        throw new OAuthError('unsupported_grant_type', 'grant_type must be authorization_code or refresh_token');
    }
  });

  // RFC 7009: an unknown or already revoked token is answered 200 too.
  router.post('/oauth/revoke', async (ctx) => {
    const form = await formBody(ctx, d.maxBodyBytes);
    const client = await d.clients.authenticate(clientCredentials(ctx, form), ctx.ip);
    setActor(ctx, { type: 'oauth_client', id: client.client_id, name: client.client_name });
    const token = form.get('token');
    if (!token) throw new OAuthError('invalid_request', 'token is required');
    await d.grants.revokeToken(token, client, requestInfo(ctx));
    ctx.status = 200;
    ctx.body = '';
  });

  // Preflights of browser-based clients are answered by `cors` (it runs for matched routes only).
  const paths = router.stack.filter((layer) => layer.methods.length > 0).map((layer) => String(layer.path));
  router.options(paths, () => undefined);
  return router;
}

/** Browser-based clients read the metadata and call the token endpoint from another origin; no cookie is ever used here. */
async function cors(ctx: Context, next: Next): Promise<void> {
  ctx.set('Access-Control-Allow-Origin', '*');
  if (ctx.method === 'OPTIONS') {
    ctx.set('Access-Control-Allow-Methods', 'GET, POST, OPTIONS');
    ctx.set('Access-Control-Allow-Headers', 'authorization, content-type, mcp-protocol-version');
    ctx.set('Access-Control-Max-Age', '600');
    ctx.status = 204;
    return;
  }
  await next();
}

async function oauthErrors(ctx: Context, next: Next): Promise<void> {
  try {
    await next();
  } catch (err) {
    if (!(err instanceof OAuthError)) throw err;
    ctx.status = err.status;
    noStore(ctx);
    if (err.retryAfter) ctx.set('Retry-After', String(err.retryAfter));
    // RFC 6749 section 5.2: a client that tried Basic authentication and failed is told how to retry.
    if (err.code === 'invalid_client' && /^Basic /i.test(ctx.get('authorization'))) ctx.set('WWW-Authenticate', 'Basic realm="oauth"');
    ctx.body = err.body;
  }
}

const noStore = (ctx: Context) => {
  ctx.set('Cache-Control', 'no-store');
  ctx.set('Pragma', 'no-cache');
};

/** An application/x-www-form-urlencoded body; a parameter given twice is refused (RFC 6749 section 3.1). */
async function formBody(ctx: Context, limit: number): Promise<URLSearchParams> {
  if (!ctx.is('application/x-www-form-urlencoded')) throw new OAuthError('invalid_request', 'The body must be application/x-www-form-urlencoded');
  let text: string;
  try {
    text = await readBody(ctx.req, limit);
  } catch (err) {
    if (err instanceof BodyTooLargeError) throw new OAuthError('invalid_request', `The body is larger than ${limit} bytes`);
    throw err;
  }
  const form = new URLSearchParams(text);
  const seen = new Set<string>();
  for (const name of form.keys()) {
    if (seen.has(name)) throw new OAuthError('invalid_request', `${name} is given more than once`);
    seen.add(name);
  }
  return form;
}

/** Client credentials from an Authorization: Basic header (RFC 6749 section 2.3.1) or the form. */
function clientCredentials(ctx: Context, form: URLSearchParams): { clientId?: string; secret?: string; method: 'basic' | 'post' | 'none' } {
  const basic = /^Basic +([A-Za-z0-9+/=]+)$/i.exec(ctx.get('authorization'));
  if (basic) {
    const decoded = Buffer.from(basic[1], 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    if (colon < 0) throw new OAuthError('invalid_client', 'The Basic credentials must be client_id:client_secret', 401);
    const decode = (part: string) => {
      try {
        return decodeURIComponent(part.replace(/\+/g, ' '));
      } catch {
        throw new OAuthError('invalid_client', 'The Basic credentials are not form-encoded correctly', 401);
      }
    };
    const clientId = decode(decoded.slice(0, colon));
    const formId = form.get('client_id');
    if (formId && formId !== clientId) throw new OAuthError('invalid_request', 'client_id in the form differs from the one in the Authorization header');
    return { clientId, secret: decode(decoded.slice(colon + 1)), method: 'basic' };
  }
  const secret = form.get('client_secret') ?? undefined;
  return { clientId: form.get('client_id') ?? undefined, secret, method: secret ? 'post' : 'none' };
}
