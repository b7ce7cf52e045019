// Test support: the real service on a loopback port (embedded store in memory, or on disk), its logs
// captured, and small helpers over the real management API. Nothing of ours is mocked.
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { type Config, loadConfig } from '../../runtime/config.ts';
import { type RunningService, startService } from '../../runtime/service.ts';

export interface TestService extends RunningService {
  /** Every log line written so far (JSON text). */
  logs: string[];
  config: Config;
  /** Calls the service's HTTP API; `token` goes in Authorization: Bearer. */
  call(
    method: string,
    path: string,
    opts?: { token?: string; body?: unknown; headers?: Record<string, string> },
  ): Promise<{ status: number; body: any; headers: Headers }>;
}

/** Starts the service; env entries override the test defaults (in-memory store, loopback allowed). */
export async function startTestService(env: Record<string, string> = {}, opts: { onDisk?: string } = {}): Promise<TestService> {
  const dataDir = opts.onDisk ?? (await mkdtemp(path.join(tmpdir(), 'tool-server-test-')));
  const config = loadConfig({
    PORT: '0',
    HOST: '127.0.0.1',
    DATA_DIR: dataDir,
    LOG_LEVEL: 'info',
    ALLOW_PRIVATE_NETWORKS: 'loopback',
    TOOL_SPECS_DIR: path.resolve('tool-specs'),
    KEY_CACHE_MS: '5000',
    STARTING_CREDITS: '0',
    ...env,
  });
  config.inMemory = !opts.onDisk;
  const logs: string[] = [];
  const destination = new Writable({
    write(chunk, _enc, done) {
      logs.push(...String(chunk).split('\n').filter(Boolean));
      done();
    },
  });
  const service = await startService({ config, logDestination: destination });
  const call: TestService['call'] = async (method, p, o = {}) => {
    const headers: Record<string, string> = { ...o.headers };
    if (o.token) headers.authorization = `Bearer ${o.token}`;
    if (o.body !== undefined) headers['content-type'] = 'application/json';
    const res = await fetch(service.url + p, { method, headers, body: o.body === undefined ? undefined : JSON.stringify(o.body) });
    const text = await res.text();
    let body: unknown = text;
    try {
      body = text ? JSON.parse(text) : null;
    } catch {
      // not JSON: keep the text
    }
    return { status: res.status, body, headers: res.headers };
  };
  return Object.assign(service, { logs, config, call });
}

export interface Owner {
  id: string;
  token: string;
}

/** Creates an owner through the operator API and grants it credits. */
export async function createOwner(svc: TestService, credits = 1000, email = `owner-${Math.random().toString(36).slice(2)}@example.com`): Promise<Owner> {
  const created = await svc.call('POST', '/api/admin/owners', { token: svc.operatorToken, body: { email } });
  if (created.status !== 201) throw new Error(`create owner: ${created.status} ${JSON.stringify(created.body)}`);
  if (credits) await svc.call('POST', `/api/admin/owners/${created.body.id}/credits`, { token: svc.operatorToken, body: { amount: credits } });
  return { id: created.body.id, token: created.body.token };
}

export interface ToolBinding {
  base_tool: string;
  name?: string;
  account?: string;
  defaults?: Record<string, unknown>;
  locked?: string[];
}

/**
 * Creates accounts, a server with the given tools and a server key through the management API.
 * `accounts` maps a label to the account body ({kind, name, ...fields}).
 */
export async function createServer(
  svc: TestService,
  owner: Owner,
  setup: { accounts?: Record<string, Record<string, unknown>>; tools: ToolBinding[]; id?: string },
): Promise<{ serverId: string; key: string; accountIds: Record<string, string> }> {
  const accountIds: Record<string, string> = {};
  for (const [label, body] of Object.entries(setup.accounts ?? {})) {
    const res = await svc.call('POST', '/api/accounts', { token: owner.token, body });
    if (res.status !== 201) throw new Error(`create account ${label}: ${res.status} ${JSON.stringify(res.body)}`);
    accountIds[label] = res.body.id;
  }
  const server = await svc.call('POST', '/api/servers', { token: owner.token, body: { name: 'test server', ...(setup.id ? { id: setup.id } : {}) } });
  if (server.status !== 201) throw new Error(`create server: ${server.status} ${JSON.stringify(server.body)}`);
  for (const t of setup.tools) {
    const res = await svc.call('POST', `/api/servers/${server.body.id}/tools`, {
      token: owner.token,
      body: { base_tool: t.base_tool, name: t.name, account_id: t.account ? accountIds[t.account] : undefined, defaults: t.defaults, locked: t.locked },
    });
    if (res.status !== 201) throw new Error(`create tool ${t.base_tool}: ${res.status} ${JSON.stringify(res.body)}`);
  }
  const key = await svc.call('POST', `/api/servers/${server.body.id}/api-keys`, { token: owner.token, body: { name: 'test key' } });
  if (key.status !== 201) throw new Error(`create key: ${key.status} ${JSON.stringify(key.body)}`);
  return { serverId: server.body.id, key: key.body.key, accountIds };
}
