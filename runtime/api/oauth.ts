// The owner's side of OAuth: the decision of the consent page, and the connected apps (grants) to review
// and revoke. The authorization server's own endpoints are in runtime/oauth/routes.ts.
import type Router from '@koa/router';
import { REQUEST_FIELDS, checkAuthorizationRequest, withParams } from '../oauth/authorize.ts';
import { publicGrant } from '../oauth/grants.ts';
import { type ApiDeps, type Guards, me } from './context.ts';
import { ApiError, jsonBody, notFound } from './http.ts';

export function oauthRoutes(router: Router, d: ApiDeps, g: Guards): void {
  // The consent page posts the request it was shown with the owner's choice; everything is checked again.
  router.post('/oauth/authorize', g.owner, async (ctx) => {
    const body = await jsonBody(ctx, d.maxBodyBytes);
    const params = Object.fromEntries(REQUEST_FIELDS.map((f) => [f, body[f]]));
    const checked = await checkAuthorizationRequest(params, d.oauth.clients, d.site.publicUrl, ctx.ip);
    if (!checked.ok) {
      if ('page' in checked) throw new ApiError(checked.status ?? 400, checked.page);
      ctx.body = { redirect_to: checked.redirectTo };
      return;
    }
    const r = checked.request;
    const answer = (extra: Record<string, string>) => ({ redirect_to: withParams(r.redirectUri, { ...extra, state: r.state, iss: d.site.publicUrl }) });
    if (body.decision === 'deny') {
      ctx.body = answer({ error: 'access_denied', error_description: 'The owner denied the request' });
      return;
    }
    if (body.decision !== 'approve') throw new ApiError(400, '"decision" must be "approve" or "deny"');
    const serverId = r.serverId ?? (typeof body.server_id === 'string' ? body.server_id : undefined);
    if (!serverId) throw new ApiError(400, '"server_id" is required: choose the server the application may use');
    // Another owner's server is "not found" too.
    const server = await d.servers.get(me(ctx)._id, serverId);
    if (!server) throw new ApiError(404, `"server_id": no server of yours has the id ${serverId}`);
    // A grant for the service as a whole is bound to the chosen server: its URL is the token's audience.
    const resource = r.serverId ? r.resource : `${d.site.publicUrl}/mcp/${server._id}`;
    const code = await d.oauth.grants.issueCode({
      client: r.client,
      redirectUri: r.redirectUri,
      codeChallenge: r.codeChallenge,
      resource,
      scope: r.scope,
      ownerId: me(ctx)._id,
      serverId: server._id,
    });
    ctx.body = answer({ code });
  });

  router.get('/oauth/grants', g.owner, async (ctx) => {
    ctx.body = { grants: (await d.oauth.grants.list(me(ctx)._id)).map(publicGrant) };
  });
  router.delete('/oauth/grants/:id', g.owner, async (ctx) => {
    const grant = await d.oauth.grants.revokeGrant(me(ctx)._id, ctx.params.id);
    if (!grant) throw notFound('Connected app');
    ctx.body = publicGrant(grant);
  });
}
