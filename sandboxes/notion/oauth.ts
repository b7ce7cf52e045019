// Notion's public-integration OAuth (connections.md §2), on the Notion sandbox's own host
// (api.notion.com): GET /v1/oauth/authorize (owner=user) renders the consent page where the user picks the
// pages to share; POST /v1/oauth/token takes HTTP Basic client_id:client_secret and a JSON body
// (authorization_code with the redirect_uri rules, refresh_token with rotation); POST /v1/oauth/revoke and
// /v1/oauth/introspect. The API accepts the access token as a bearer and sees exactly the pages shared with
// that integration's bot; a revoked or expired one gets Notion's 401 `unauthorized`.
//
// Enabled with `startNotionSandbox({ oauth: { clients } })`; the sandbox then has `oauth: NotionOAuth`.
import { randomUUID } from 'node:crypto';
import type http from 'node:http';
import { SandboxClock } from '../oauth/clock.ts';
import { GrantBook, randomToken, type Grant } from '../oauth/grants.ts';
import { oauthControls } from '../oauth/controls.ts';
import type { OAuthClient, OAuthControls } from '../oauth/oauth.ts';
import { ConsentRequests, decisionButtons, html, readForm, redirectTo, sendErrorPage, sendPage, type Brand } from '../oauth/pages.ts';
import { authenticateClient, basicCredentials, TokenLog, type TokenAnswer } from '../oauth/token-endpoint.ts';
import { CONSENT, NOTION } from '../oauth/unverified.ts';
import { sendJson } from '../harness.ts';
import { NotionApi } from './api.ts';
import { WORKSPACE_NAME, type Workspace } from './model.ts';

export interface NotionOAuthOptions {
  /** The public integrations registered at Notion. */
  clients: OAuthClient[];
  clock?: SandboxClock;
  /** How long an access token works (unverified at Notion; default in sandboxes/oauth/unverified.ts). */
  accessTokenTtlMs?: number;
}

export interface NotionOAuth extends OAuthControls {
  /** The signed-in Notion user who consents (Ada Lovelace of the seed). */
  user: { id: string; name: string; email: string };
  workspace: { id: string; name: string; icon: string | null };
}

const BRAND: Brand = { name: 'Notion', accent: '#0b6bcb' };

/** An authorize request that passed every check, waiting for the user's pages and decision. */
interface AuthorizeRequest {
  client: OAuthClient;
  /** Where to send the user back: the request's redirect_uri, or the integration's only one. */
  redirectUri: string;
  /** Whether the authorize URL carried it (then the token request must carry it too). */
  redirectUriGiven: boolean;
  state: string | undefined;
}

/** What a grant holds: the bot the integration acts as in this workspace. */
interface GrantData {
  botId: string;
}

/** The OAuth endpoints and pages of one Notion sandbox, and the APIs its access tokens reach. */
export interface NotionOAuthServer {
  controls: NotionOAuth;
  /** Answers POST /v1/oauth/token, /revoke and /introspect (`raw` is the body already read). */
  endpoint(req: http.IncomingMessage, res: http.ServerResponse, path: string, raw: string): void;
  /** The API as the integration behind a live OAuth access token sees it, or undefined (401). */
  apiFor(accessToken: string): NotionApi | undefined;
  close(): void;
}

export function createNotionOAuth(
  ws: Workspace,
  user: { id: string; name: string; email: string },
  options: NotionOAuthOptions & { templateDelayMs: number },
): NotionOAuthServer {
  const clock = options.clock ?? new SandboxClock();
  const clients = options.clients;
  const workspace = { id: randomUUID(), name: WORKSPACE_NAME, icon: NOTION.workspaceIcon };
  const { errors } = NOTION;
  const book = new GrantBook<GrantData>(clock, {
    accessTtlMs: options.accessTokenTtlMs ?? NOTION.accessTokenTtlMs,
    codeTtlMs: NOTION.codeTtlMs,
    reuseLeewayMs: 0,
    reuseRevokesGrantRefreshTokens: false,
    newAccessToken: () => `${NOTION.accessTokenPrefix}${randomToken(33)}`,
    newRefreshToken: () => `${NOTION.refreshTokenPrefix}${randomToken(33)}`,
  });
  const consents = new ConsentRequests<AuthorizeRequest>(clock, CONSENT.requestTtlMs);
  const log = new TokenLog(clock);
  /** Each integration's bot in this workspace, and the API as that bot sees it. */
  const bots = new Map<string, { botId: string; api: NotionApi }>();

  const botOf = (client: OAuthClient) => {
    let bot = bots.get(client.clientId);
    if (!bot) {
      const botId = randomUUID();
      ws.users.set(botId, { id: botId, name: client.name ?? 'Tool Server', type: 'bot', ownerUserId: user.id });
      bot = { botId, api: new NotionApi(ws.as(botId), { isPublicIntegration: true, templateDelayMs: options.templateDelayMs }) };
      bots.set(client.clientId, bot);
    }
    return bot;
  };

  /** The pages a user can pick: the workspace's top-level pages. */
  const topPages = () => [...ws.pages.values()].filter((p) => p.parent.kind === 'workspace' && !p.inTrash && !p.template);

  const checkAuthorize = (query: URLSearchParams): { ok: AuthorizeRequest } | { error: string } => {
    const client = clients.find((c) => c.clientId === query.get('client_id'));
    if (!client) return { error: 'This integration does not exist (invalid client_id).' };
    const given = query.get('redirect_uri');
    let redirectUri: string;
    if (given !== null) {
      if (!client.redirectUris.includes(given)) return { error: `The redirect_uri is not one of the redirect URIs of ${client.name ?? 'this integration'}.` };
      redirectUri = given;
    } else if (client.redirectUris.length === 1) {
      redirectUri = client.redirectUris[0];
    } else {
      return { error: `${client.name ?? 'This integration'} has several redirect URIs: the request must say which one (redirect_uri).` };
    }
    if (query.get('response_type') !== 'code') return { error: 'response_type must be code.' };
    if (query.get('owner') !== 'user') return { error: 'owner must be user.' };
    return { ok: { client, redirectUri, redirectUriGiven: given !== null, state: query.get('state') ?? undefined } };
  };

  const consentPage = (res: http.ServerResponse, request: AuthorizeRequest) => {
    const app = request.client.name ?? 'Tool Server';
    const botId = bots.get(request.client.clientId)?.botId;
    const requestId = consents.open(request);
    sendPage(
      res,
      200,
      BRAND,
      `${app} would like to access ${workspace.name}`,
      html`<h1>${app} would like to access ${workspace.name}</h1>
        <p class="muted">Signed in as ${user.name} (${user.email})</p>
        <form method="post" action="authorize">
          <fieldset>
            <legend>Pages ${app} can access</legend>
            <p class="muted">${app} will be able to read, edit and add to the pages you select and everything inside them.</p>
            ${topPages().map(
              (page) =>
                html`<label
                  ><input
                    type="checkbox"
                    name="page"
                    value="${page.id}"
                    ${botId && page.sharedWith.has(botId) ? html` checked` : ''}
                  />${ws.pageTitle(page) || 'Untitled'}</label
                >`,
            )}
          </fieldset>
          ${decisionButtons(requestId, 'Allow access', 'Cancel')}
        </form>`,
    );
  };

  const pages = async (req: http.IncomingMessage, res: http.ServerResponse, url: URL): Promise<void> => {
    if (req.method === 'GET') {
      const checked = checkAuthorize(url.searchParams);
      if ('error' in checked) return sendErrorPage(res, 400, BRAND, checked.error);
      return consentPage(res, checked.ok);
    }
    const form = await readForm(req);
    const request = consents.take(form.get('request'));
    if (!request) return sendErrorPage(res, 400, BRAND, 'This authorization request has expired or was already answered. Start again from the app.');
    if (form.get('decision') !== 'accept') return redirectTo(res, request.redirectUri, { error: 'access_denied', state: request.state });
    const { botId } = botOf(request.client);
    // What is checked is shared with the integration; what was shared and is now unchecked is not any more.
    const picked = new Set(form.getAll('page'));
    for (const page of topPages()) {
      if (picked.has(page.id)) page.sharedWith.add(botId);
      else if (NOTION.consentReplacesShares) page.sharedWith.delete(botId);
    }
    const grant = book.grant(request.client.clientId, user.id, [], { botId }, () => true);
    const code = book.issueCode(grant, { redirectUri: request.redirectUriGiven ? request.redirectUri : undefined });
    redirectTo(res, request.redirectUri, { code, state: request.state });
  };

  const tokenAnswer = (grant: Grant<GrantData>, tokens: { accessToken: string; refreshToken?: string }): TokenAnswer => ({
    status: 200,
    body: {
      access_token: tokens.accessToken,
      token_type: 'bearer',
      refresh_token: tokens.refreshToken ?? null,
      bot_id: grant.data.botId,
      workspace_name: workspace.name,
      workspace_icon: workspace.icon,
      workspace_id: workspace.id,
      owner: { type: 'user', user: { object: 'user', id: user.id, name: user.name, avatar_url: null, type: 'person', person: { email: user.email } } },
      duplicated_template_id: null,
      request_id: randomUUID(),
    },
  });

  const bodyOf = (raw: string): Record<string, unknown> | undefined => {
    try {
      const parsed: unknown = JSON.parse(raw || '{}');
      return typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed) ? (parsed as Record<string, unknown>) : undefined;
    } catch {
      return undefined;
    }
  };

  const token = (client: OAuthClient, body: Record<string, unknown>): TokenAnswer => {
    const grantType = body.grant_type;
    if (grantType === 'authorization_code') {
      if (typeof body.code !== 'string' || body.code === '') return errors.missing('code');
      const code = book.takeCode(body.code, client.clientId);
      if (!code) return errors.badCode;
      if (code.redirectUri !== undefined && body.redirect_uri !== code.redirectUri) {
        return body.redirect_uri === undefined ? errors.redirectRequired : errors.redirectMismatch;
      }
      if (code.redirectUri === undefined && body.redirect_uri !== undefined) return errors.redirectNotAllowed;
      if (NOTION.reauthorizationEndsEarlierPairs) book.revokeTokens(code.grant);
      return tokenAnswer(code.grant, book.issue(code.grant, true));
    }
    if (grantType === 'refresh_token') {
      if (typeof body.refresh_token !== 'string' || body.refresh_token === '') return errors.missing('refresh_token');
      const result = book.refresh(body.refresh_token, client.clientId);
      return 'refused' in result ? errors.badRefresh : tokenAnswer(result.grant, result.tokens);
    }
    return errors.unsupportedGrant(String(grantType ?? ''));
  };

  const endpoint = (req: http.IncomingMessage, res: http.ServerResponse, path: string, raw: string): void => {
    const credentials = basicCredentials(req.headers.authorization);
    const client = credentials && authenticateClient(clients, credentials.id, credentials.secret);
    const body = bodyOf(raw);
    const send = (answer: TokenAnswer) =>
      path === '/v1/oauth/token' ? log.answer(res, body?.grant_type, credentials?.id, answer) : sendJson(res, answer.status, answer.body);
    if (!client) return send(errors.badClient);
    if (!body) return send(errors.notJson);
    if (path === '/v1/oauth/token') return send(token(client, body));
    if (typeof body.token !== 'string' || body.token === '') return send(errors.missing('token'));
    if (path === '/v1/oauth/revoke') {
      const grant = book.grantOf(body.token);
      if (grant?.clientId === client.clientId) {
        if (NOTION.revokeEndsAuthorization) book.revokeGrant(grant);
        else book.revokeTokens(grant);
      }
      return send({ status: 200, body: { request_id: randomUUID() } });
    }
    const found = book.introspect(body.token, client.clientId);
    return send({
      status: 200,
      body: found.active
        ? { active: true, scope: NOTION.introspectScope, iat: Math.floor(found.issuedAt / 1000), request_id: randomUUID() }
        : { active: false, request_id: randomUUID() },
    });
  };

  const controls: NotionOAuth = {
    ...oauthControls({ clock, book, log, brand: BRAND, authorizePath: '/v1/oauth/authorize', consent: pages }),
    user,
    workspace,
    revokeApp(clientId) {
      book.revokeClient(clientId);
      // The integration leaves the workspace: nothing is shared with its bot any more.
      for (const [id, bot] of bots) {
        if (clientId !== undefined && id !== clientId) continue;
        for (const record of [...ws.pages.values(), ...ws.databases.values()]) record.sharedWith.delete(bot.botId);
      }
    },
  };

  return {
    controls,
    endpoint,
    apiFor(accessToken) {
      const result = book.access(accessToken);
      if (!('grant' in result)) return undefined;
      return [...bots.values()].find((b) => b.botId === result.grant.data.botId)?.api;
    },
    close() {
      for (const bot of bots.values()) bot.api.close();
    },
  };
}
