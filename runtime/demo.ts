// `npm run demo`: the service on embedded storage with the four provider simulators on loopback, an owner
// with credits, sandbox accounts, one server exposing every base tool, and a server key. Prints ONE JSON line
// {base_url, server_id, api_key, owner_token, operator_token} on stdout (logs go to stderr) and runs until
// SIGINT/SIGTERM. PORT and DATA_DIR are honoured.
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pino } from 'pino';
import { startJiraSimulator } from '../test/simulators/jira/index.ts';
import { startN8nSimulator } from '../test/simulators/n8n/index.ts';
import { startNotionSimulator } from '../test/simulators/notion/index.ts';
import { startPostgrestSimulator } from '../test/simulators/postgrest/index.ts';
import { loadConfig } from './config.ts';
import { startService } from './service.ts';

async function main(): Promise<void> {
  const [jira, n8n, notion, postgrest] = await Promise.all([startJiraSimulator(), startN8nSimulator(), startNotionSimulator(), startPostgrestSimulator()]);
  const sandboxAccounts: Record<string, Record<string, string>> = {
    tracker: { name: 'Sandbox Jira', site_url: jira.url, email: jira.credentials.email, api_token: jira.credentials.apiToken },
    automation: { name: 'Sandbox n8n', base_url: n8n.url, api_key: n8n.apiKey },
    workspace: { name: 'Sandbox Notion', integration_token: notion.token, api_url: notion.url },
    database: { name: 'Sandbox Supabase (anon key)', url: postgrest.url, key: postgrest.anonKey },
  };

  const env = {
    ...process.env,
    DATA_DIR: process.env.DATA_DIR || (await mkdtemp(path.join(tmpdir(), 'tool-server-demo-'))),
    // The simulators live on loopback: the demo opens the outbound guard for loopback only.
    ALLOW_PRIVATE_NETWORKS: process.env.ALLOW_PRIVATE_NETWORKS || 'loopback',
  };
  const config = loadConfig(env);
  const service = await startService({ config, logDestination: pino.destination(2) });

  const api = async (method: string, p: string, token: string, body?: unknown) => {
    const res = await fetch(service.url + p, { method, headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) });
    const json = (await res.json()) as Record<string, any>;
    if (!res.ok) throw new Error(`${method} ${p}: ${res.status} ${JSON.stringify(json)}`);
    return json;
  };
  const owner = await api('POST', '/api/admin/owners', service.operatorToken, { email: `demo-${Date.now()}@example.com` });
  await api('POST', `/api/admin/owners/${owner.id}/credits`, service.operatorToken, { amount: 1000 });
  const accountByKind = new Map<string, string>();
  for (const provider of service.catalog.current.providers.values()) {
    const kind = provider.spec.account.kind;
    const account = await api('POST', '/api/accounts', owner.token, { kind, ...sandboxAccounts[kind] });
    accountByKind.set(kind, account.id as string);
  }
  const server = await api('POST', '/api/servers', owner.token, { name: 'Demo server', id: `demo-${Date.now().toString(36)}` });
  for (const tool of service.catalog.current.tools.values()) {
    await api('POST', `/api/servers/${server.id}/tools`, owner.token, { base_tool: tool.spec.id, account_id: accountByKind.get(tool.provider.spec.account.kind) });
  }
  const key = await api('POST', `/api/servers/${server.id}/api-keys`, owner.token, { name: 'demo key' });
  process.stdout.write(
    JSON.stringify({ base_url: service.url, server_id: server.id, api_key: key.key, owner_token: owner.token, operator_token: service.operatorToken }) + '\n',
  );

  const stop = async () => {
    await service.close();
    await Promise.all([jira.close(), n8n.close(), notion.close(), postgrest.close()]);
    process.exit(0);
  };
  process.once('SIGINT', () => void stop());
  process.once('SIGTERM', () => void stop());
}

main().catch((err) => {
  console.error(err instanceof Error ? err.message : err);
  process.exit(1);
});
