// The OAuth sandboxes as the service serves them (sandboxes/in-service.ts): every host on a unix socket, the
// consent pages mounted under a path of another server (the service's origin), the token endpoints and APIs
// reached over the sockets, and `oauth.urls` pointing provider.yaml's URLs at the right sandbox.
import { createHash } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import http from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listenOnLoopback, type RunningSandbox } from '../../sandboxes/harness.ts';
import { SANDBOX_DEFINITIONS, type SandboxDefinition, type ServedSandbox } from '../../sandboxes/in-service.ts';
import { SharedDatabase } from '../../sandboxes/postgrest/postgrest-sandbox.ts';
import { codeOf, consent } from '../support/oauth-consent.ts';

const CALLBACK = 'https://tools.example.com/connect/callback';
const secret = (label: string) => createHash('sha256').update(`owner-1\0${label}`).digest('base64url').slice(0, 32);

/** One request over a unix socket, as the service's sandbox transport sends it. */
function overSocket(
  socketPath: string,
  method: string,
  target: string,
  headers: Record<string, string> = {},
  body?: string,
): Promise<{ status: number; json: any }> {
  return new Promise((resolve, reject) => {
    const req = http.request({ socketPath, method, path: target, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        resolve({ status: res.statusCode ?? 0, json: text ? JSON.parse(text) : undefined });
      });
    });
    req.on('error', reject);
    req.end(body);
  });
}

describe('the OAuth sandboxes served in the service', () => {
  let folder: string;
  let database: SharedDatabase;
  let mount: RunningSandbox;
  const served = new Map<string, ServedSandbox>();
  const sockets = new Map<string, string>();

  beforeAll(async () => {
    folder = await mkdtemp(path.join(tmpdir(), 'oauth-in-service-'));
    database = await SharedDatabase.start();
    let n = 0;
    for (const def of SANDBOX_DEFINITIONS.filter((d) => d.oauth)) {
      const addresses = Object.fromEntries(def.hosts.map((host) => [host, { path: path.join(folder, `${++n}.sock`), url: `https://${host}` }]));
      for (const [host, address] of Object.entries(addresses)) sockets.set(host, address.path);
      served.set(def.kind, await def.start({ sockets: addresses, secret, database: async () => database, oauthRedirectUri: CALLBACK }));
    }
    // The service's origin: /sandbox-consent/<kind>/... reaches that sandbox's consent pages.
    mount = await listenOnLoopback((req, res) => {
      const match = /^\/sandbox-consent\/([a-z]+)(\/.*)$/.exec(req.url ?? '');
      const pages = match && served.get(match[1])?.pages;
      if (!pages) return void res.writeHead(404).end();
      req.url = match[2];
      pages(req, res);
    });
  }, 120_000);
  afterAll(async () => {
    await mount?.close();
    for (const s of served.values()) await s.close();
    await database?.close();
    if (folder) await rm(folder, { recursive: true, force: true });
  });

  const definition = (kind: string): SandboxDefinition => SANDBOX_DEFINITIONS.find((d) => d.kind === kind)!;
  /** The socket of the sandbox host that stands for a provider URL, and the path below it. */
  const resolve = (def: SandboxDefinition, providerUrl: string): { socket: string; path: string } => {
    const [real, stand] = Object.entries(def.oauth!.urls).find(([from]) => providerUrl.startsWith(from))!;
    const target = new URL(stand + providerUrl.slice(real.length));
    return { socket: sockets.get(target.hostname)!, path: target.pathname + target.search };
  };
  const authorize = (kind: string, query: Record<string, string>) =>
    `${mount.url}/sandbox-consent/${kind}${definition(kind).oauth!.authorizePath}?${new URLSearchParams(query)}`;

  it('Jira: consent through the mount, tokens and two sites over the sockets', async () => {
    const def = definition('tracker');
    const app = def.oauth!.client(secret);
    const scope = 'read:jira-work write:jira-work read:jira-user offline_access';
    const back = await consent(
      authorize('tracker', {
        audience: 'api.atlassian.com',
        client_id: app.clientId,
        scope,
        redirect_uri: CALLBACK,
        state: 's',
        response_type: 'code',
        prompt: 'consent',
      }),
    );
    const tokenAt = resolve(def, 'https://auth.atlassian.com/oauth/token');
    const answer = await overSocket(
      tokenAt.socket,
      'POST',
      tokenAt.path,
      { 'content-type': 'application/json' },
      JSON.stringify({
        grant_type: 'authorization_code',
        client_id: app.clientId,
        client_secret: app.clientSecret,
        code: codeOf(back, 's'),
        redirect_uri: CALLBACK,
      }),
    );
    expect(answer.status).toBe(200);
    const bearer = { authorization: `Bearer ${answer.json.access_token}` };
    const resourcesAt = resolve(def, 'https://api.atlassian.com/oauth/token/accessible-resources');
    const sites = (await overSocket(resourcesAt.socket, 'GET', resourcesAt.path, bearer)).json as Array<{ id: string; url: string }>;
    expect(sites.map((s) => s.url)).toEqual(['https://jira.sandbox.invalid', 'https://jira-labs.sandbox.invalid']);
    for (const site of sites) {
      const me = resolve(def, `https://api.atlassian.com/ex/jira/${site.id}/rest/api/3/myself`);
      expect((await overSocket(me.socket, 'GET', me.path, bearer)).status).toBe(200);
    }
    // The same owner's secret gives the same app at every start; another owner's is another app.
    expect(def.oauth!.client(secret)).toEqual(app);
  });

  it('Notion: consent through the mount, the token and the API over the socket', async () => {
    const def = definition('workspace');
    const app = def.oauth!.client(secret);
    const back = await consent(authorize('workspace', { client_id: app.clientId, redirect_uri: CALLBACK, response_type: 'code', owner: 'user', state: 'n' }));
    const tokenAt = resolve(def, 'https://api.notion.com/v1/oauth/token');
    const basic = `Basic ${Buffer.from(`${app.clientId}:${app.clientSecret}`).toString('base64')}`;
    const answer = await overSocket(
      tokenAt.socket,
      'POST',
      tokenAt.path,
      { 'content-type': 'application/json', authorization: basic },
      JSON.stringify({ grant_type: 'authorization_code', code: codeOf(back, 'n'), redirect_uri: CALLBACK }),
    );
    expect(answer.status).toBe(200);
    const meAt = resolve(def, 'https://api.notion.com/v1/users/me');
    const me = await overSocket(meAt.socket, 'GET', meAt.path, { authorization: `Bearer ${answer.json.access_token}`, 'notion-version': '2025-09-03' });
    expect(me.json).toMatchObject({ id: answer.json.bot_id, type: 'bot' });
  });

  it('Supabase: consent through the mount, the project and its keys, and its Data API at the URL the template gives', async () => {
    const def = definition('database');
    const app = def.oauth!.client(secret);
    const verifier = 'x'.repeat(50);
    const challenge = createHash('sha256').update(verifier).digest('base64url');
    const url = authorize('database', {
      client_id: app.clientId,
      redirect_uri: CALLBACK,
      response_type: 'code',
      state: 'd',
      code_challenge: challenge,
      code_challenge_method: 'S256',
    });
    const organization = /name="organization" value="([a-z]+)"/.exec(await (await fetch(url)).text())![1];
    const back = await consent(url, 'accept', [['organization', organization]]);
    const tokenAt = resolve(def, 'https://api.supabase.com/v1/oauth/token');
    const answer = await overSocket(
      tokenAt.socket,
      'POST',
      tokenAt.path,
      { 'content-type': 'application/x-www-form-urlencoded', authorization: `Basic ${Buffer.from(`${app.clientId}:${app.clientSecret}`).toString('base64')}` },
      new URLSearchParams({ grant_type: 'authorization_code', code: codeOf(back, 'd'), redirect_uri: CALLBACK, code_verifier: verifier }).toString(),
    );
    expect(answer.status).toBe(201);
    const bearer = { authorization: `Bearer ${answer.json.access_token}` };
    const projectsAt = resolve(def, 'https://api.supabase.com/v1/projects');
    const [project] = (await overSocket(projectsAt.socket, 'GET', projectsAt.path, bearer)).json as Array<{ ref: string }>;
    const keysAt = resolve(def, `https://api.supabase.com/v1/projects/${project.ref}/api-keys`);
    const keys = (await overSocket(keysAt.socket, 'GET', keysAt.path, bearer)).json as Array<{ name: string; api_key: string }>;
    const anon = keys.find((k) => k.name === 'anon')!.api_key;
    // provider.yaml's template of a project's Data API, filled in after the sandbox URL that stands for it.
    const dataApi = new URL(`${def.oauth!.urls['https://{ref}.supabase.co'].replace('{ref}', project.ref)}/rest/v1/todos`);
    expect(dataApi.href).toBe(`https://supabase-data.sandbox.invalid/${project.ref}/rest/v1/todos`);
    const todos = { socket: sockets.get(dataApi.hostname)!, path: dataApi.pathname };
    const viaProject = await overSocket(todos.socket, 'GET', todos.path, { apikey: anon });
    expect(viaProject.status).toBe(200);
    // The pasted sandbox account's URL is the same project: same keys, same rows.
    const pasted = await overSocket(sockets.get('supabase.sandbox.invalid')!, 'GET', '/rest/v1/todos', { apikey: anon });
    expect(pasted).toEqual(viaProject);
  });
});
