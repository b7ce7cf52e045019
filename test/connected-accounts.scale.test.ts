// One refresh per account across every instance and worker: two `npm start` processes and one with WORKERS=2
// on one MongoDB (FerretDB under CI), the Atlassian OAuth sandbox on loopback. Twenty calls through one
// connected account whose access token the sandbox's clock has expired, spread over every process at once:
// exactly one token request reaches the sandbox (the store's lease), and every call succeeds.
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MINUTE } from '../sandboxes/oauth/clock.ts';
import { APP_ENV, HttpBrowser, type OAuthSandboxes, startOAuthSandboxes } from './support/connect.ts';
import { connectV1 } from './support/mcp-clients.ts';
import { MONGODB_URL, dropTestDatabases, mongoTestUrl } from './support/mongo.ts';
import { type ServiceProcess, freePort, startServiceProcess } from './support/process.ts';
import { type ToolResult, succeeded } from './support/tool-calls.ts';

describe.runIf(Boolean(MONGODB_URL))('connected accounts on several instances of one MongoDB', () => {
  let sandboxes: OAuthSandboxes;
  const processes: ServiceProcess[] = [];
  const urls: string[] = [];

  beforeAll(async () => {
    // A refresh takes a second: long enough for every process to meet the expired token while it is under way.
    sandboxes = await startOAuthSandboxes({ slowRefreshMs: 1000 });
    const port = await freePort();
    const env = {
      ...APP_ENV,
      MONGODB_URL: mongoTestUrl('connected_scale').url,
      MASTER_KEY: randomBytes(32).toString('hex'),
      OPERATOR_TOKEN: 'op_connected_scale_token_0123456789',
      // The first instance's address is the public one (the callback every flow comes back to).
      PUBLIC_URL: `http://127.0.0.1:${port}`,
      TOOL_SPECS_DIR: sandboxes.specsDir,
      ALLOW_PRIVATE_NETWORKS: 'loopback',
      STARTING_CREDITS: '1000',
    };
    const extras: Array<Record<string, string>> = [{ PORT: String(port) }, {}, { WORKERS: '2', PORT: String(await freePort()) }];
    for (const extra of extras) {
      const proc = startServiceProcess({ ...env, ...extra });
      processes.push(proc);
      urls.push(await proc.url);
    }
    sandboxes.register(env.PUBLIC_URL);
  }, 120_000);

  afterAll(async () => {
    for (const p of processes) p.child.kill('SIGTERM');
    await Promise.all(processes.map((p) => p.exit));
    await sandboxes?.close();
    await dropTestDatabases();
  });

  it('sends one token request for twenty concurrent calls on an expired token, and every call succeeds', async () => {
    const b = new HttpBrowser(urls[0]);
    await b.signUp();
    const started = await b.api('POST', '/api/accounts/connect', { provider: 'tracker', name: 'Jira' });
    const consent = await b.follow(started.body.authorize_url);
    const picker = await b.consent(consent.url, consent.html);
    const chosen = await b.api('POST', `/api/connect/flows/${new URL(picker.url).searchParams.get('flow')}/choose`, {
      choice: sandboxes.atlassian.sites[0].cloudId,
    });
    const accountId = new URL(chosen.body.redirect_to, urls[0]).searchParams.get('connected')!;
    const server = await b.api('POST', '/api/servers', { name: 'jira' });
    await b.api('POST', `/api/servers/${server.body.id}/tools`, { base_tool: 'tracker_search_issues', account_id: accountId });
    const key = (await b.api('POST', `/api/servers/${server.body.id}/api-keys`, { name: 'k' })).body.key;
    // One official client per instance; the instance with two workers gets twice the clients.
    const clients = await Promise.all([urls[0], urls[1], urls[2], urls[2]].map((url) => connectV1(url, server.body.id, key)));

    sandboxes.clock.advance(61 * MINUTE);
    const before = sandboxes.atlassian.tokenRequestCount('refresh_token');
    const results = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        clients[i % clients.length].callTool({ name: 'tracker_search_issues', arguments: { jql: 'project = DEMO', max_results: 1 } }),
      ),
    );
    for (const r of results) expect(succeeded(r as ToolResult).issues).toHaveLength(1);
    const refreshes = sandboxes.atlassian.tokenRequestCount('refresh_token') - before;
    console.log(
      `connected accounts at scale: 20 calls on an expired token over ${processes.length} instances (one with WORKERS=2): ${refreshes} token request`,
    );
    expect(refreshes).toBe(1);
    await Promise.all(clients.map((c) => c.close()));
  }, 120_000);
});
