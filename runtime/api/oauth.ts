// The owner's side of OAuth: the decision of the consent page (with what the app may do), and the connected
// apps (grants) to review, restrict and revoke. The authorization server's own endpoints are in
// runtime/oauth/routes.ts.
import type Router from '@koa/router';
import type { Context } from 'koa';
import {
  RESTRICTION_MESSAGES,
  RESTRICTION_PROPERTIES,
  type RestrictionInput,
  applyRestrictions,
  restrictionChanges,
  restrictionsView,
} from '../access/restrictions.ts';
import { requestInfo } from '../audit/request-context.ts';
import { REQUEST_FIELDS, checkAuthorizationRequest, withParams } from '../oauth/authorize.ts';
import { type GrantDoc, publicGrant } from '../oauth/grants.ts';
import { bodyChecker } from './body-schema.ts';
import { type ApiDeps, type Guards, me } from './context.ts';
import { ApiError, jsonBody, notFound } from './http.ts';

const RESTRICTION_FIELDS = Object.keys(RESTRICTION_PROPERTIES);
const checkRestrictions = bodyChecker<RestrictionInput>({ properties: RESTRICTION_PROPERTIES }, RESTRICTION_MESSAGES);
const pick = (body: Record<string, unknown>, fields: readonly string[]) =>
  Object.fromEntries(fields.filter((f) => body[f] !== undefined).map((f) => [f, body[f]]));

export function oauthRoutes(router: Router, d: ApiDeps, g: Guards): void {
  const toolNames = async (ownerId: string, serverId: string) => (await d.tools.list(ownerId, serverId)).map((t) => t.name);
  const grantTarget = (grant: GrantDoc) => ({ type: 'grant', id: grant._id, name: grant.client_name });

  // The consent page posts the request it was shown with the owner's choice; everything is checked again.
  router.post('/oauth/authorize', g.owner, async (ctx) => {
    const body = await jsonBody(ctx, d.maxBodyBytes);
    const params = pick(body, REQUEST_FIELDS);
    const checked = await checkAuthorizationRequest(params, d.oauth.clients, d.site.publicUrl, ctx.ip);
    if (!checked.ok) {
      if ('page' in checked) throw new ApiError(checked.status ?? 400, checked.page);
      ctx.body = { redirect_to: checked.redirectTo };
      return;
    }
    const r = checked.request;
    const answer = (extra: Record<string, string>) => ({ redirect_to: withParams(r.redirectUri, { ...extra, state: r.state, iss: d.site.publicUrl }) });
    const client = { type: 'oauth_client', id: r.client.client_id, name: r.client.client_name };
    if (body.decision === 'deny') {
      await d.audit.record(requestInfo(ctx), { action: 'grant.deny', owner_id: me(ctx)._id, target: client });
      ctx.body = answer({ error: 'access_denied', error_description: 'The owner denied the request' });
      return;
    }
    if (body.decision !== 'approve') throw new ApiError(400, '"decision" must be "approve" or "deny"');
    const serverId = r.serverId ?? (typeof body.server_id === 'string' ? body.server_id : undefined);
    if (!serverId) throw new ApiError(400, '"server_id" is required: choose the server the application may use');
    // Another owner's server is "not found" too.
    const server = await d.servers.get(me(ctx)._id, serverId);
    if (!server) throw new ApiError(404, `"server_id": no server of yours has the id ${serverId}`);
    const restrictions = applyRestrictions(undefined, checkRestrictions(pick(body, RESTRICTION_FIELDS)), await toolNames(me(ctx)._id, server._id));
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
      restrictions,
    });
    const { tools, access, expires_at, credit_limit } = restrictionsView(restrictions);
    await d.audit.record(requestInfo(ctx), {
      action: 'grant.approve',
      owner_id: me(ctx)._id,
      target: client,
      changes: { server_id: server._id, redirect_host: new URL(r.redirectUri).host, tools, access, expires_at, credit_limit },
    });
    ctx.body = answer({ code });
  });

  /** The list view, with the credits spent in the current budget period of each app that has a budget. */
  const listed = async (grants: GrantDoc[]) => {
    const limited = grants.flatMap((gr) => (gr.restrictions?.credit_limit ? [{ keyId: gr._id, limit: gr.restrictions.credit_limit }] : []));
    const spent = await d.budgets.spent(limited);
    return grants.map((gr) => ({ ...publicGrant(gr), budget_spent: spent.get(gr._id) ?? null }));
  };
  const ownGrant = async (ctx: Context) => {
    const grant = await d.oauth.grants.get(me(ctx)._id, ctx.params.id);
    if (!grant) throw notFound('Connected app');
    return grant;
  };

  router.get('/oauth/grants', g.owner, async (ctx) => {
    ctx.body = { grants: await listed(await d.oauth.grants.list(me(ctx)._id)) };
  });
  router.patch('/oauth/grants/:id', g.owner, async (ctx) => {
    const body = checkRestrictions(await jsonBody(ctx, d.maxBodyBytes));
    const grant = await ownGrant(ctx);
    const restrictions = applyRestrictions(grant.restrictions, body, await toolNames(me(ctx)._id, grant.server_id));
    const updated = (await d.oauth.grants.restrict(me(ctx)._id, grant._id, restrictions))!;
    await d.audit.record(requestInfo(ctx), {
      action: 'grant.update',
      owner_id: me(ctx)._id,
      target: grantTarget(grant),
      changes: restrictionChanges(grant.restrictions, restrictions),
    });
    ctx.body = (await listed([updated]))[0];
  });
  router.delete('/oauth/grants/:id', g.ownerRevoking, async (ctx) => {
    const before = await ownGrant(ctx);
    const grant = (await d.oauth.grants.revokeGrant(me(ctx)._id, ctx.params.id))!;
    if (!before.revoked_at)
      await d.audit.record(requestInfo(ctx), {
        action: 'grant.revoke',
        owner_id: me(ctx)._id,
        target: grantTarget(grant),
        changes: { reason: 'revoked by the owner' },
      });
    ctx.body = publicGrant(grant);
  });
}
