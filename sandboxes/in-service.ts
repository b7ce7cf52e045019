// The four sandboxes as the service serves them to its owners (runtime/sandbox/sandboxes.ts): each on a unix
// socket, under host names of the reserved `.invalid` domain (RFC 2606: they never resolve, so only the service's
// own transport reaches them), with seeded data and credentials derived from a secret of the owner.
import type { SocketAddress } from './harness.ts';
import { startJiraSandbox } from './jira/jira-sandbox.ts';
import { SEED_USERS } from './jira/seed.ts';
import { startN8nSandbox } from './n8n/n8n-sandbox.ts';
import { startNotionSandbox } from './notion/notion-sandbox.ts';
import { makeProjectKeys } from './postgrest/auth.ts';
import { type SharedDatabase, startPostgrestSandbox } from './postgrest/postgrest-sandbox.ts';

export const SANDBOX_DOMAIN = 'sandbox.invalid';

/** Whether a host name is one the service's sandboxes could answer (any name under the reserved domain). */
export const isSandboxHost = (hostname: string): boolean => hostname.toLowerCase().replace(/\.$/, '').endsWith(`.${SANDBOX_DOMAIN}`);

/** What a sandbox start gets: where each of its hosts listens, the owner's secrets, and the shared database. */
export interface SandboxStart {
  sockets: Record<string, SocketAddress>;
  /** A secret of the owner for this label (the same at every start, different for every owner). */
  secret(label: string): string;
  database(): Promise<SharedDatabase>;
}

export interface ServedSandbox {
  close(): Promise<void>;
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
