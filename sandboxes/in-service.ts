// The sandboxes as the service serves them to its owners (runtime/sandbox/sandboxes.ts): each on a unix socket,
// under host names of the reserved `.invalid` domain (RFC 2606: they never resolve, so only the service's own
// transport reaches them), with seeded data and credentials derived from a secret of the owner. The four API
// sandboxes back the sandbox accounts made with credentials; the three OAuth sandboxes (Atlassian, Notion,
// Supabase) stand in for the providers' authorization servers and APIs, so an owner can connect a sandbox
// account by OAuth and click through its consent page (served through the service's own origin).
import type http from 'node:http';
import { startAtlassianSandbox } from './atlassian/atlassian-sandbox.ts';
import type { SocketAddress } from './harness.ts';
import { type JiraSandbox, startJiraSandbox } from './jira/jira-sandbox.ts';
import { SEED_USERS } from './jira/seed.ts';
import { startN8nSandbox } from './n8n/n8n-sandbox.ts';
import { startNotionSandbox } from './notion/notion-sandbox.ts';
import { makeProjectKeys } from './postgrest/auth.ts';
import { type SharedDatabase, startPostgrestSandbox } from './postgrest/postgrest-sandbox.ts';
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
  /** Where the service's connect flows come back: the redirect URI of the app registered at an OAuth sandbox. */
  redirectUri: string;
}

export interface ServedSandbox {
  close(): Promise<void>;
  /** An OAuth sandbox's consent pages (mountable under any path: sandboxes/oauth/oauth.ts). */
  pages?: http.RequestListener;
}

/** What every sandbox the service serves declares. */
export interface ServedDefinition {
  /** The account kind it simulates (provider.yaml `account.kind`). */
  kind: string;
  /** Its name. */
  name: string;
  /** The host names it answers. */
  hosts: string[];
  start(at: SandboxStart): Promise<ServedSandbox>;
}

/** An API sandbox, for the sandbox accounts with credentials that POST /api/sandbox makes. */
export interface SandboxDefinition extends ServedDefinition {
  /** The account's fields, as POST /api/accounts takes them (they name the sandbox's hosts). */
  account(secret: SandboxStart['secret']): Record<string, string>;
  /** A read-only call to try first: a base tool of the provider and its arguments. */
  example: { tool: string; arguments: Record<string, unknown> };
}

/** An OAuth sandbox: a provider's authorization server and APIs, for the owner's sandbox connections. */
export interface ConnectionSandbox extends ServedDefinition {
  /**
   * The provider's URLs (of its provider.yaml `connect`, and those it leads to) this sandbox answers in their
   * place: a real origin -> the sandbox URL standing for it. `{name}` in a real host matches one DNS label and
   * carries over (a Supabase project's own host becomes a path of the sandbox's Data API).
   */
  stands: Record<string, string>;
  /** The app this service is registered as at the sandbox (derived from the owner's secret). */
  app(secret: SandboxStart['secret']): { clientId: string; clientSecret: string };
}

const host = (name: string) => `${name}.${SANDBOX_DOMAIN}`;
const url = (name: string) => `https://${host(name)}`;

const JIRA = host('jira');
const JIRA_GATEWAY = host('jira-gateway');
const N8N = host('n8n');
const NOTION = host('notion');
const SUPABASE = host('supabase');

const jiraToken = (secret: SandboxStart['secret']) => `ATATT3xFfGF0-sandbox-${secret('jira api token')}`;
const n8nKey = (secret: SandboxStart['secret']) => `n8n_api_${secret('n8n api key')}`;
const notionToken = (secret: SandboxStart['secret']) => `ntn_${secret('notion token')}`;

export const SANDBOX_DEFINITIONS: readonly SandboxDefinition[] = [
  {
    kind: 'tracker',
    name: 'Sandbox Jira',
    hosts: [JIRA, JIRA_GATEWAY],
    account: (secret) => ({ site_url: url('jira'), email: SEED_USERS.alice.email, api_token: jiraToken(secret), gateway_url: url('jira-gateway') }),
    start: ({ sockets, secret }) =>
      startJiraSandbox({ socket: sockets[JIRA], gatewaySocket: sockets[JIRA_GATEWAY], apiToken: jiraToken(secret), record: false }),
    example: { tool: 'tracker_search_issues', arguments: { jql: 'project = DEMO ORDER BY created DESC', max_results: 5 } },
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
    start: ({ sockets, secret }) => startNotionSandbox({ socket: sockets[NOTION], token: notionToken(secret), record: false }),
    example: { tool: 'search_pages', arguments: { query: 'Welcome' } },
  },
  {
    kind: 'database',
    name: 'Sandbox Supabase',
    hosts: [SUPABASE],
    // The publishable key: row-level security applies, as for a browser app's key.
    account: (secret) => ({ url: url('supabase'), key: makeProjectKeys(secret('supabase keys')).publishableKey }),
    start: async ({ sockets, secret, database }) =>
      startPostgrestSandbox({ socket: sockets[SUPABASE], keySeed: secret('supabase keys'), database: await database(), record: false }),
    example: { tool: 'database_read_records', arguments: { table: 'todos', limit: 5 } },
  },
];

/** The app this service is, at an owner's OAuth sandbox of a provider. */
const sandboxApp = (label: string) => (secret: SandboxStart['secret']) => ({
  clientId: `sandbox-${label}-${secret(`${label} client id`).slice(0, 16)}`,
  clientSecret: secret(`${label} client secret`),
});

/** The app as the sandbox registers it: its callback is the service's connect callback. */
const registered = (app: { clientId: string; clientSecret: string }, redirectUri: string): OAuthClient => ({
  ...app,
  redirectUris: [redirectUri],
  name: 'Tool Server',
});

const ATLASSIAN_AUTH = host('atlassian-auth');
const ATLASSIAN_API = host('atlassian-api');
/** The Atlassian account's two Jira sites (the owner picks one). */
const ATLASSIAN_SITES = [
  { name: 'acme', host: host('acme-jira'), gateway: host('acme-jira-gateway') },
  { name: 'acme-labs', host: host('acme-labs-jira'), gateway: host('acme-labs-jira-gateway') },
];
const NOTION_CONNECT = host('notion-connect');
const SUPABASE_API = host('supabase-api');
const SUPABASE_DATA = host('supabase-data');

const atlassianApp = sandboxApp('atlassian');
const notionApp = sandboxApp('notion');
const supabaseApp = sandboxApp('supabase');

export const SANDBOX_CONNECTIONS: readonly ConnectionSandbox[] = [
  {
    kind: 'tracker',
    name: 'Sandbox Jira (OAuth)',
    hosts: [ATLASSIAN_AUTH, ATLASSIAN_API, ...ATLASSIAN_SITES.flatMap((s) => [s.host, s.gateway])],
    stands: { 'https://auth.atlassian.com': url('atlassian-auth'), 'https://api.atlassian.com': url('atlassian-api') },
    app: atlassianApp,
    async start({ sockets, secret, redirectUri }) {
      // Each site is a Jira sandbox of its own, reached through the API host's /ex/jira/<cloudId>; its cloud id
      // stays the same at every start, so a connected account finds its site again.
      const sites: Array<{ name: string; jira: JiraSandbox }> = [];
      try {
        for (const site of ATLASSIAN_SITES)
          sites.push({
            name: site.name,
            jira: await startJiraSandbox({
              socket: sockets[site.host],
              gatewaySocket: sockets[site.gateway],
              cloudId: secret(`${site.name} cloud id`).replace(/_/g, '-'),
              record: false,
            }),
          });
        const atlassian = await startAtlassianSandbox({
          clients: [registered(atlassianApp(secret), redirectUri)],
          sites,
          authSocket: sockets[ATLASSIAN_AUTH],
          apiSocket: sockets[ATLASSIAN_API],
          record: false,
        });
        return { pages: atlassian.pages, close: async () => void (await Promise.all([atlassian.close(), ...sites.map((s) => s.jira.close())])) };
      } catch (err) {
        await Promise.all(sites.map((s) => s.jira.close()));
        throw err;
      }
    },
  },
  {
    kind: 'workspace',
    name: 'Sandbox Notion (OAuth)',
    hosts: [NOTION_CONNECT],
    stands: { 'https://api.notion.com': url('notion-connect') },
    app: notionApp,
    async start({ sockets, secret, redirectUri }) {
      const notion = await startNotionSandbox({
        socket: sockets[NOTION_CONNECT],
        token: notionToken(secret),
        oauth: { clients: [registered(notionApp(secret), redirectUri)] },
        record: false,
      });
      return { pages: notion.oauth.pages, close: () => notion.close() };
    },
  },
  {
    kind: 'database',
    name: 'Sandbox Supabase (OAuth)',
    hosts: [SUPABASE_API, SUPABASE_DATA],
    // A project's Data API, https://<ref>.supabase.co, is <data host>/<ref> in the sandbox.
    stands: { 'https://api.supabase.com': url('supabase-api'), 'https://{ref}.supabase.co': `${url('supabase-data')}/{ref}` },
    app: supabaseApp,
    async start({ sockets, secret, redirectUri, database }) {
      const supabase = await startSupabaseSandbox({
        clients: [registered(supabaseApp(secret), redirectUri)],
        socket: sockets[SUPABASE_API],
        dataSocket: sockets[SUPABASE_DATA],
        database: await database(),
        organizations: [
          {
            name: 'Acme',
            slug: 'acme',
            projects: [{ name: 'todo-app', ref: 'sandboxtodoapp', region: 'eu-central-1', keySeed: secret('supabase project keys') }],
          },
          { name: 'Side projects', slug: 'side-projects', projects: [] },
        ],
        record: false,
      });
      return { pages: supabase.pages, close: () => supabase.close() };
    },
  },
];
