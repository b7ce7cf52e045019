// The service as a real process (`node --import tsx runtime/main.ts`: the sources `npm start` runs built), its
// output captured, and the URL it listens on once it says so; its management API over HTTP, and a caller of the
// fixture provider's demo_ping set up through it.
import { type ChildProcess, spawn } from 'node:child_process';
import { createServer } from 'node:net';
import path from 'node:path';
import type { DemoUpstream } from './upstream.ts';

export interface ServiceProcess {
  child: ChildProcess;
  output: () => string;
  url: Promise<string>;
  exit: Promise<number | null>;
}

/**
 * Starts `runtime/main.ts`; the embedded store unless env names MONGODB_URL, e-mail off unless it names SMTP_URL
 * (the suite's own are not passed on).
 * `clockSkewMs`: the process's clock that far off (support/skewed-clock.ts), as on a host out of sync.
 * `program`: node's arguments instead of the sources' (a build of them with its own safety net, test/build.test.ts).
 */
export function startServiceProcess(env: Record<string, string>, options: { clockSkewMs?: number; program?: string[] } = {}): ServiceProcess {
  // The service under test gets the suite's network safety net too.
  const skew = options.clockSkewMs ? ['--import', './test/support/skewed-clock.ts'] : [];
  const program = options.program ?? ['--import', 'tsx', '--import', './test/support/loopback-only.ts', ...skew, 'runtime/main.ts'];
  const child = spawn(process.execPath, program, {
    env: {
      ...process.env,
      HOST: '127.0.0.1',
      PORT: '0',
      LOG_LEVEL: 'warn',
      WATCH_SPECS: 'false',
      MONGODB_URL: '',
      SMTP_URL: '',
      MAIL_FROM: '',
      TEST_CLOCK_SKEW_MS: String(options.clockSkewMs ?? 0),
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout!.on('data', (d) => (out += d));
  child.stderr!.on('data', (d) => (out += d));
  const url = new Promise<string>((resolve, reject) => {
    const check = () => {
      const m = /listening on (http:\/\/\S+)/.exec(out);
      if (m) resolve(m[1]);
    };
    child.stderr!.on('data', check);
    child.once('exit', () => reject(new Error(`exited before listening: ${out}`)));
  });
  const exit = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return { child, output: () => out, url, exit };
}

/** A loopback port free now (for a service that must know its port before it starts: WORKERS, PUBLIC_URL). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

/** A process on the embedded store in `dataDir` with the fixture provider's specs, loopback allowed and no rate limit in the way. */
export function fixtureEnv(dataDir: string, operatorToken: string): Record<string, string> {
  return {
    DATA_DIR: dataDir,
    TOOL_SPECS_DIR: path.resolve('test/fixtures/specs'),
    OPERATOR_TOKEN: operatorToken,
    ALLOW_PRIVATE_NETWORKS: 'loopback',
    RATE_LIMIT_BURST: '1000000',
    RATE_LIMIT_PER_MINUTE: '10000000',
    LOG_LEVEL: 'warn',
    STARTING_CREDITS: '0',
  };
}

/** One request of the management API at `base`: its status, headers and JSON body. */
export async function apiCall(
  base: string,
  method: string,
  p: string,
  token: string,
  body?: unknown,
): Promise<{ status: number; headers: Headers; body: any }> {
  const res = await fetch(base + p, {
    method,
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, headers: res.headers, body: await res.json() };
}

/** An owner with `credits`, an account on the fixture upstream, a server exposing demo_ping (1 credit) and a key, made through the API at `base`. */
export async function pingCaller(base: string, operatorToken: string, upstream: DemoUpstream, credits: number, email: string) {
  const api = async (method: string, p: string, token: string, body?: unknown) => (await apiCall(base, method, p, token, body)).body;
  const owner = await api('POST', '/api/admin/owners', operatorToken, { email });
  await api('POST', `/api/admin/owners/${owner.id}/credits`, operatorToken, { amount: credits });
  const account = await api('POST', '/api/accounts', owner.token, { kind: 'demo', name: 'd', base_url: upstream.url, token: upstream.token });
  const server = await api('POST', '/api/servers', owner.token, { name: 's' });
  await api('POST', `/api/servers/${server.id}/tools`, owner.token, { base_tool: 'demo_ping', account_id: account.id });
  const key = (await api('POST', `/api/servers/${server.id}/api-keys`, owner.token, { name: 'k' })).key as string;
  return { owner: { id: owner.id as string, token: owner.token as string }, serverId: server.id as string, key };
}
