// The demo data set: the four provider sandboxes on loopback and the service with an owner who can sign in
// to the dashboard, sandbox accounts, one server exposing every base tool, and a server key. Used by
// `npm run demo` and by the screenshot script.
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { startJiraSandbox } from '../sandboxes/jira/jira-sandbox.ts';
import { startN8nSandbox } from '../sandboxes/n8n/n8n-sandbox.ts';
import { startNotionSandbox } from '../sandboxes/notion/notion-sandbox.ts';
import { startPostgrestSandbox } from '../sandboxes/postgrest/postgrest-sandbox.ts';
import { loadConfig } from './config.ts';
import { type RunningService, startService } from './service.ts';

export interface Demo {
  service: RunningService;
  owner: { id: string; email: string; password: string; token: string };
  serverId: string;
  apiKey: string;
  /** The owner's account of each kind. */
  accounts: Record<string, string>;
  /** Base URLs of the sandboxes on loopback. */
  sandboxes: { jira: string; jira_gateway: string; n8n: string; notion: string; supabase: string };
  close(): Promise<void>;
}

/** The demo's end users and the kinds of sandbox account each connected. */
const DEMO_END_USERS = [
  { user: { external_id: 'user-1042', display_name: 'Ada Lovelace', email: 'ada@example.com' }, kinds: ['tracker', 'workspace'] },
  {
    user: { external_id: 'user-1077', display_name: 'Grace Hopper', email: 'grace@example.com', credit_limit: { credits: 500, per: 'month' } },
    kinds: ['database'],
  },
  { user: { external_id: 'user-2001', display_name: null, email: null }, kinds: [] },
];

export async function startDemo(env: NodeJS.ProcessEnv = process.env): Promise<Demo> {
  const [jira, n8n, notion, postgrest] = await Promise.all([startJiraSandbox(), startN8nSandbox(), startNotionSandbox(), startPostgrestSandbox()]);
  const sandboxAccounts: Record<string, Record<string, string>> = {
    tracker: { name: 'Sandbox Jira', site_url: jira.url, email: jira.credentials.email, api_token: jira.credentials.apiToken, gateway_url: jira.gatewayUrl },
    automation: { name: 'Sandbox n8n', base_url: n8n.url, api_key: n8n.apiKey },
    workspace: { name: 'Sandbox Notion', integration_token: notion.token, api_url: notion.url },
    database: { name: 'Sandbox Supabase (anon key)', url: postgrest.url, key: postgrest.anonKey },
  };
  const config = loadConfig({
    ...env,
    DATA_DIR: env.DATA_DIR || (await mkdtemp(path.join(tmpdir(), 'tool-server-demo-'))),
    // The sandboxes live on loopback: the demo opens the outbound guard for loopback only.
    ALLOW_PRIVATE_NETWORKS: env.ALLOW_PRIVATE_NETWORKS || 'loopback',
    SIGNUP: 'open',
    STARTING_CREDITS: '1000',
  });
  const service = await startService({ config, logDestination: 2 });

  const api = async (method: string, p: string, auth: { token?: string }, body?: unknown) => {
    const headers: Record<string, string> = { 'content-type': 'application/json' };
    if (auth.token) headers.authorization = `Bearer ${auth.token}`;
    const res = await fetch(service.url + p, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
    const json = (await res.json()) as Record<string, string>;
    if (!res.ok) throw new Error(`${method} ${p}: ${res.status} ${JSON.stringify(json)}`);
    return { json, res };
  };
  // The owner is made by the operator and sets a password through the invitation, as an invited person would
  // (whether or not e-mail is on: an invited address needs no verification); the dashboard opens with it.
  const email = `demo-${Date.now().toString(36)}@example.com`;
  const password = `demo ${Math.random().toString(36).slice(2, 10)} password`;
  const { json: created } = await api('POST', '/api/admin/owners', { token: service.operatorToken }, { email });
  await api('POST', '/api/auth/invitation', {}, { token: new URL(created.invite_url).hash.slice(1), password });
  const token = created.token;

  const accountByKind = new Map<string, string>();
  for (const provider of service.catalog.current.providers.values()) {
    const kind = provider.spec.account.kind;
    const account = (await api('POST', '/api/accounts', { token }, { kind, ...sandboxAccounts[kind] })).json;
    accountByKind.set(kind, account.id as string);
  }
  const server = (await api('POST', '/api/servers', { token }, { name: 'Demo server', id: `demo-${Date.now().toString(36)}` })).json;
  for (const tool of service.catalog.current.tools.values()) {
    await api(
      'POST',
      `/api/servers/${server.id}/tools`,
      { token },
      { base_tool: tool.spec.id, account_id: accountByKind.get(tool.provider.spec.account.kind) },
    );
  }
  const key = (await api('POST', `/api/servers/${server.id}/api-keys`, { token }, { name: 'demo key' })).json;
  // End users of the owner's product, with sandbox accounts they pasted on their connect links' page (as a
  // person's browser does: the link's cookie, the page's CSRF token, the token form).
  const providerIds = new Map([...service.catalog.current.providers.values()].map((p) => [p.spec.account.kind, p.spec.id]));
  for (const person of DEMO_END_USERS) {
    const endUser = (await api('POST', '/api/end-users', { token }, person.user)).json;
    if (!person.kinds.length) continue;
    const link = (await api('POST', '/api/connect-sessions', { token }, { end_user_id: endUser.id })).json;
    const opened = await fetch(link.url);
    const browserCookie = opened.headers.getSetCookie()[0].split(';')[0];
    const csrfField = /name="csrf" value="([^"]+)"/.exec(await opened.text())?.[1] ?? '';
    for (const kind of person.kinds) {
      const { name: _name, ...fields } = sandboxAccounts[kind];
      const posted = await fetch(`${link.url}/token`, {
        method: 'POST',
        redirect: 'manual',
        headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: browserCookie, origin: service.url },
        body: new URLSearchParams({ csrf: csrfField, provider: providerIds.get(kind)!, ...fields }),
      });
      if (posted.status !== 302) throw new Error(`end user ${person.user.external_id}: connecting ${kind} answered ${posted.status}`);
    }
  }
  return {
    service,
    owner: { id: created.id, email, password, token },
    serverId: server.id as string,
    apiKey: key.key as string,
    accounts: Object.fromEntries(accountByKind),
    sandboxes: { jira: jira.url, jira_gateway: jira.gatewayUrl, n8n: n8n.url, notion: notion.url, supabase: postgrest.url },
    async close() {
      await service.close();
      await Promise.all([jira.close(), n8n.close(), notion.close(), postgrest.close()]);
    },
  };
}
