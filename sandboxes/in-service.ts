// The four sandboxes as the service serves them to its owners (runtime/sandbox/sandboxes.ts): each on a unix
// socket, under host names of the reserved `.invalid` domain (RFC 2606: they never resolve, so only the service's
// own transport reaches them), with seeded data and credentials derived from a secret of the owner.
//
// Jira, Notion and Supabase also run their provider's OAuth authorization server (`oauth`), so an owner can
// try "Connect" without an account anywhere. Server to server (token endpoint, APIs) goes through the same
// unix sockets: `oauth.urls` says which sandbox URL stands for each URL of provider.yaml. A browser cannot
// reach a socket, so the consent pages are `ServedSandbox.pages`, a handler the service mounts under a path
// of its own origin (strip the mount prefix from req.url, leave the body unread; every link in the pages is
// relative); the authorize URL a browser opens is then <PUBLIC_URL><mount><oauth.authorizePath>?<the query
// provider.yaml builds>. The app the service uses at the sandbox is `oauth.client(secret)`, registered with
// the redirect URI the service passes as `SandboxStart.oauthRedirectUri`.
//
// A set stops after its idle time and starts again from the seed: grants and tokens of a sandbox go with it, so a
// connected sandbox account then needs reconnecting (its data was reset anyway).
import type http from 'node:http';
import { startAtlassianSandbox } from './atlassian/atlassian-sandbox.ts';
import { listen, type SocketAddress } from './harness.ts';
import { startJiraSandbox } from './jira/jira-sandbox.ts';
import { SEED_USERS } from './jira/seed.ts';
import { startN8nSandbox } from './n8n/n8n-sandbox.ts';
import { startNotionSandbox } from './notion/notion-sandbox.ts';
import { makeProjectKeys } from './postgrest/auth.ts';
import { type SharedDatabase, createPostgrestProject } from './postgrest/postgrest-sandbox.ts';
import type { OAuthClient } from './oauth/oauth.ts';
import { startSupabaseSandbox } from './supabase/supabase-sandbox.ts';

export const SANDBOX_DOMAIN = 'sandbox.invalid';

/** Whether a host name is one the service's sandboxes could answer (any name under the reserved domain). */
export const isSandboxHost = (hostname: string): boolean => hostname.toLowerCase().replace(/\.$/, '').endsWith(`.${SANDBOX_DOMAIN}`);

/** What a sandbox start gets: where each of its hosts listens, the owner's secrets, and the shared database. */
export interface SandboxStart {
  sockets: Record<string, SocketAddress>;
  /** A secret of the owner for this label (the same at every start, different for every owner). */
  secret(label: string): string;
  database(): Promise<SharedDatabase>;
  /** The redirect URI registered for the service's app at the OAuth sandboxes (<PUBLIC_URL>/connect/callback); none: no app can complete a consent. */
  oauthRedirectUri?: string;
}

export interface ServedSandbox {
  /** The consent pages of its OAuth server, to mount under a path of the service (see the header). */
  pages?: http.RequestListener;
  close(): Promise<void>;
}

/** A sandbox's OAuth authorization server, for "Connect" with sandbox accounts. */
export interface SandboxOAuth {
  /** The app the service uses at this owner's sandbox (the secret derives from the owner's). */
  client(secret: SandboxStart['secret']): { clientId: string; clientSecret: string };
  /** Each URL (or URL template) of provider.yaml's `connect`, and the sandbox URL that stands for it. */
  urls: Record<string, string>;
  /** The authorize route, relative to the mounted `pages`. */
  authorizePath: string;
}

export interface SandboxDefinition {
  /** The account kind it simulates (provider.yaml `account.kind`). */
  kind: string;
  /** Its account's name. */
  name: string;
  /** The host names it answers (the account's fields name them). */
  hosts: string[];
  /** The account's fields, as POST /api/accounts takes them. */
  account(secret: SandboxStart['secret']): Record<string, string>;
  start(at: SandboxStart): Promise<ServedSandbox>;
  /** A read-only call to try first: a base tool of the provider and its arguments. */
  example: { tool: string; arguments: Record<string, unknown> };
  /** Its provider's OAuth server, when it has one. */
  oauth?: SandboxOAuth;
}

const host = (name: string) => `${name}.${SANDBOX_DOMAIN}`;
const url = (name: string) => `https://${host(name)}`;

const JIRA = host('jira');
const JIRA_GATEWAY = host('jira-gateway');
const JIRA_LABS = host('jira-labs');
const JIRA_LABS_GATEWAY = host('jira-labs-gateway');
const ATLASSIAN_AUTH = host('auth-atlassian');
const ATLASSIAN_API = host('api-atlassian');
const N8N = host('n8n');
const NOTION = host('notion');
const SUPABASE = host('supabase');
const SUPABASE_API = host('api-supabase');
const SUPABASE_DATA = host('supabase-data');

const jiraToken = (secret: SandboxStart['secret']) => `ATATT3xFfGF0-sandbox-${secret('jira api token')}`;
const n8nKey = (secret: SandboxStart['secret']) => `n8n_api_${secret('n8n api key')}`;
const notionToken = (secret: SandboxStart['secret']) => `ntn_${secret('notion token')}`;

/** The service's app at an owner's OAuth sandbox: a fixed id, a secret of the owner. */
const oauthApp = (provider: string) => (secret: SandboxStart['secret']) => ({
  clientId: `tool-server-sandbox-${provider}`,
  clientSecret: secret(`${provider} oauth client secret`),
});
const registered = (app: ReturnType<ReturnType<typeof oauthApp>>, redirectUri: string | undefined): OAuthClient[] => [
  { ...app, redirectUris: redirectUri ? [redirectUri] : [], name: 'Tool Server' },
];
const ATLASSIAN_APP = oauthApp('atlassian');
const NOTION_APP = oauthApp('notion');
const SUPABASE_APP = oauthApp('supabase');

/** A UUID derived from a secret (a cloud id that stays the same at every start). */
const secretUuid = (text: string) =>
  Buffer.from(text)
    .toString('hex')
    .padEnd(32, '0')
    .slice(0, 32)
    .replace(/^(.{8})(.{4})(.{4})(.{4})/, '$1-$2-$3-$4-');

/** 20 lowercase letters derived from a secret (a Supabase project ref or organization slug). */
const letters = (text: string) =>
  [...Buffer.from(text)]
    .map((b) => String.fromCharCode(97 + (b % 26)))
    .join('')
    .padEnd(20, 'a')
    .slice(0, 20);

export const SANDBOX_DEFINITIONS: readonly SandboxDefinition[] = [
  {
    kind: 'tracker',
    name: 'Sandbox Jira',
    hosts: [JIRA, JIRA_GATEWAY, JIRA_LABS, JIRA_LABS_GATEWAY, ATLASSIAN_AUTH, ATLASSIAN_API],
    account: (secret) => ({ site_url: url('jira'), email: SEED_USERS.alice.email, api_token: jiraToken(secret), gateway_url: url('jira-gateway') }),
    // Two sites (the pasted account's and a second one), so a connect shows the site picker.
    start: async ({ sockets, secret, oauthRedirectUri }) => {
      const site = await startJiraSandbox({ socket: sockets[JIRA], gatewaySocket: sockets[JIRA_GATEWAY], apiToken: jiraToken(secret), record: false });
      const started = [site];
      try {
        const labs = await startJiraSandbox({
          socket: sockets[JIRA_LABS],
          gatewaySocket: sockets[JIRA_LABS_GATEWAY],
          cloudId: secretUuid(secret('jira labs cloud id')),
          record: false,
        });
        started.push(labs);
        const atlassian = await startAtlassianSandbox({
          clients: registered(ATLASSIAN_APP(secret), oauthRedirectUri),
          sites: [
            { name: 'sandbox', jira: site },
            { name: 'sandbox-labs', jira: labs },
          ],
          authSocket: sockets[ATLASSIAN_AUTH],
          apiSocket: sockets[ATLASSIAN_API],
          record: false,
        });
        return {
          pages: atlassian.pages,
          close: async () => {
            await atlassian.close();
            await Promise.all(started.map((s) => s.close()));
          },
        };
      } catch (err) {
        await Promise.all(started.map((s) => s.close()));
        throw err;
      }
    },
    example: { tool: 'tracker_search_issues', arguments: { jql: 'project = DEMO ORDER BY created DESC', max_results: 5 } },
    oauth: {
      client: ATLASSIAN_APP,
      urls: { 'https://auth.atlassian.com': url('auth-atlassian'), 'https://api.atlassian.com': url('api-atlassian') },
      authorizePath: '/authorize',
    },
  },
  {
    kind: 'automation',
    name: 'Sandbox n8n',
    hosts: [N8N],
    account: (secret) => ({ base_url: url('n8n'), api_key: n8nKey(secret) }),
    start: ({ sockets, secret }) => startN8nSandbox({ socket: sockets[N8N], apiKey: n8nKey(secret), record: false }),
    example: { tool: 'automation_List_Workflows', arguments: { limit: 5 } },
  },
  {
    kind: 'workspace',
    name: 'Sandbox Notion',
    hosts: [NOTION],
    account: (secret) => ({ integration_token: notionToken(secret), api_url: url('notion') }),
    start: async ({ sockets, secret, oauthRedirectUri }) => {
      const notion = await startNotionSandbox({
        socket: sockets[NOTION],
        token: notionToken(secret),
        record: false,
        oauth: { clients: registered(NOTION_APP(secret), oauthRedirectUri) },
      });
      return { pages: notion.oauth.pages, close: () => notion.close() };
    },
    example: { tool: 'search_pages', arguments: { query: 'Welcome' } },
    oauth: { client: NOTION_APP, urls: { 'https://api.notion.com': url('notion') }, authorizePath: '/v1/oauth/authorize' },
  },
  {
    kind: 'database',
    name: 'Sandbox Supabase',
    hosts: [SUPABASE, SUPABASE_API, SUPABASE_DATA],
    // The publishable key: row-level security applies, as for a browser app's key.
    account: (secret) => ({ url: url('supabase'), key: makeProjectKeys(secret('supabase keys')).publishableKey }),
    // One project: the pasted account's URL and the connected account's (the project's Data API URL) reach the
    // same data with the same keys, as a real project's two URLs would.
    start: async ({ sockets, secret, database, oauthRedirectUri }) => {
      const ref = letters(secret('supabase project'));
      const project = await createPostgrestProject({ database: await database(), keySeed: secret('supabase keys'), ref, record: false });
      const opened: Array<{ close(): Promise<void> }> = [project];
      const closeAll = async () => {
        for (const o of opened.reverse()) await o.close();
      };
      try {
        opened.push(await listen(project.handler, { socket: sockets[SUPABASE] }));
        // The account a connect reaches: an organization with that project, and one with none.
        const supabase = await startSupabaseSandbox({
          clients: registered(SUPABASE_APP(secret), oauthRedirectUri),
          organizations: [
            { name: 'Sandbox', slug: letters(secret('supabase organization')), projects: [{ name: 'todo-app', ref, data: project }] },
            { name: 'Empty organization', slug: letters(secret('supabase empty organization')), projects: [] },
          ],
          socket: sockets[SUPABASE_API],
          dataSocket: sockets[SUPABASE_DATA],
          record: false,
        });
        opened.push(supabase);
        return { pages: supabase.pages, close: closeAll };
      } catch (err) {
        await closeAll();
        throw err;
      }
    },
    example: { tool: 'database_read_records', arguments: { table: 'todos', limit: 5 } },
    oauth: {
      client: SUPABASE_APP,
      urls: { 'https://api.supabase.com': url('api-supabase'), 'https://{ref}.supabase.co': `${url('supabase-data')}/{ref}` },
      authorizePath: '/v1/oauth/authorize',
    },
  },
];
