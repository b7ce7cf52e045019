// Connected accounts under test: the three OAuth sandboxes on loopback with this service registered at each
// (the operator's apps), a copy of tool-specs/ whose provider URLs point at them (what TOOL_SPECS_DIR is for),
// and a browser's view of the service over plain HTTP (a session cookie, redirects followed by hand, consent
// forms posted) for the suites that do not need Chromium.
import { cp, mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { expect } from 'vitest';
import { type AtlassianSandbox, startAtlassianSandbox } from '../../sandboxes/atlassian/atlassian-sandbox.ts';
import { type NotionSandbox, startNotionSandbox } from '../../sandboxes/notion/notion-sandbox.ts';
import { SandboxClock } from '../../sandboxes/oauth/clock.ts';
import type { OAuthClient } from '../../sandboxes/oauth/oauth.ts';
import { type SupabaseSandbox, startSupabaseSandbox } from '../../sandboxes/supabase/supabase-sandbox.ts';
import { listenOnLoopback, readBody } from '../../sandboxes/harness.ts';
import { requestIdOf } from './oauth-consent.ts';

/** The operator's apps, one per provider, as the environment gives them to the service. */
export const APPS = {
  tracker: { clientId: 'atlassian-app-3LO-test', clientSecret: 'atlassian-app-secret-0123456789abcdef' },
  workspace: { clientId: 'notion-public-integration-test', clientSecret: 'secret_notion_app_0123456789abcdef' },
  database: { clientId: 'supabase-oauth-app-test', clientSecret: 'sba_supabase_app_secret_0123456789ab' },
};

/** OAUTH_<PROVIDER>_CLIENT_ID / _SECRET of every app. */
export const APP_ENV: Record<string, string> = Object.fromEntries(
  Object.entries(APPS).flatMap(([provider, app]) => [
    [`OAUTH_${provider.toUpperCase()}_CLIENT_ID`, app.clientId],
    [`OAUTH_${provider.toUpperCase()}_CLIENT_SECRET`, app.clientSecret],
  ]),
);

export interface OAuthSandboxes {
  clock: SandboxClock;
  atlassian: AtlassianSandbox;
  notion: NotionSandbox;
  supabase: SupabaseSandbox;
  /** The registered apps: a service's callback is added once its URL is known. */
  clients: OAuthClient[];
  /** The copy of tool-specs/ that points at these sandboxes. */
  specsDir: string;
  /** Registers `<serviceUrl>/connect/callback` at every sandbox (as the operator does in each developer console). */
  register(serviceUrl: string): void;
  close(): Promise<void>;
}

/**
 * `slowRefreshMs`: Atlassian's token endpoint takes this long to answer a refresh (a relay in front of the
 * sandbox holds it), so that every process of a test meets the expired token while one refresh is under way.
 */
export async function startOAuthSandboxes(options: { slowRefreshMs?: number } = {}): Promise<OAuthSandboxes> {
  const clock = new SandboxClock();
  const client = (app: { clientId: string; clientSecret: string }): OAuthClient => ({ ...app, redirectUris: [], name: 'Tool Server' });
  const clients = [client(APPS.tracker), client(APPS.workspace), client(APPS.database)];
  const atlassian = await startAtlassianSandbox({ clients: [clients[0]], clock });
  const notion = await startNotionSandbox({ oauth: { clients: [clients[1]], clock } });
  const supabase = await startSupabaseSandbox({ clients: [clients[2]], clock });
  const relay = options.slowRefreshMs ? await slowRefreshRelay(atlassian.authUrl, options.slowRefreshMs) : undefined;
  const specsDir = await connectSpecs({
    'https://auth.atlassian.com': relay?.url ?? atlassian.authUrl,
    'https://api.atlassian.com': atlassian.apiUrl,
    'https://api.notion.com': notion.url,
    'https://api.supabase.com': supabase.url,
    'https://{ref}.supabase.co': `${supabase.dataApiUrl}/{ref}`,
  });
  return {
    clock,
    atlassian,
    notion,
    supabase,
    clients,
    specsDir,
    register(serviceUrl) {
      for (const c of clients) c.redirectUris.push(`${serviceUrl}/connect/callback`);
    },
    close: async () => {
      await Promise.all([atlassian.close(), notion.close(), supabase.close(), relay?.close()]);
    },
  };
}

/** A loopback relay to `target` that holds each refresh-token request `delayMs` before passing it on. */
async function slowRefreshRelay(target: string, delayMs: number) {
  return listenOnLoopback(async (req, res) => {
    const body = await readBody(req);
    if (body.includes('"refresh_token"')) await new Promise((resolve) => setTimeout(resolve, delayMs));
    const headers = Object.fromEntries(Object.entries(req.headers).filter(([k]) => !['host', 'connection', 'content-length'].includes(k))) as Record<
      string,
      string
    >;
    const answer = await fetch(target + req.url, {
      method: req.method,
      headers,
      body: req.method === 'GET' || req.method === 'HEAD' ? undefined : body,
      redirect: 'manual',
    });
    res.writeHead(
      answer.status,
      Object.fromEntries([...answer.headers].filter(([k]) => !['content-length', 'content-encoding', 'transfer-encoding', 'connection'].includes(k))),
    );
    res.end(Buffer.from(await answer.arrayBuffer()));
  });
}

/**
 * tool-specs/ copied, with each provider URL of `urls` replaced by the sandbox's. The sandbox serves every
 * Supabase project's Data API under a path of one port, where Supabase gives each its own host: the copy's
 * project URL field takes a path (the real one refuses any, to catch a pasted /rest/v1).
 */
async function connectSpecs(urls: Record<string, string>): Promise<string> {
  const dir = await mkdtemp(path.join(tmpdir(), 'connect-specs-'));
  await cp(path.resolve('tool-specs'), dir, { recursive: true });
  for (const provider of ['tracker', 'workspace', 'database']) {
    const file = path.join(dir, provider, 'provider.yaml');
    let text = await readFile(file, 'utf8');
    for (const [real, sandbox] of Object.entries(urls)) text = text.split(real).join(sandbox);
    if (provider === 'database') text = text.replace(/pattern: "\^https\?:\/\/\[\^\/\?#\]\+\/\?\$"/, 'pattern: "^https?://[^?#]+$"');
    await writeFile(file, text);
  }
  return dir;
}

/** What a browser of one signed-in owner does, over HTTP: its session cookie, CSRF token, and page visits. */
export class HttpBrowser {
  cookie = '';
  csrf = '';
  /** An owner token, for an owner the operator made (no sign-up, so no sign-up limit): sent instead of the session. */
  token = '';

  constructor(readonly serviceUrl: string) {}

  /** Signs up a new owner in this browser; resolves to their id. */
  async signUp(email = `owner-${Math.random().toString(36).slice(2)}@example.com`, password = 'correct horse battery staple'): Promise<string> {
    const res = await fetch(`${this.serviceUrl}/api/auth/signup`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', origin: this.serviceUrl },
      body: JSON.stringify({ email, password }),
    });
    const body = (await res.json()) as { id: string; csrf_token: string };
    expect(res.status, JSON.stringify(body)).toBe(201);
    this.cookie = res.headers.get('set-cookie')!.split(';')[0];
    this.csrf = body.csrf_token;
    return body.id;
  }

  /** The management API as the dashboard calls it (session cookie + CSRF token). */
  async api(method: string, p: string, body?: unknown): Promise<{ status: number; body: any }> {
    const res = await fetch(this.serviceUrl + p, {
      method,
      headers: {
        ...(this.token ? { authorization: `Bearer ${this.token}` } : { cookie: this.cookie, 'x-csrf-token': this.csrf }),
        origin: this.serviceUrl,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : null };
  }

  /** GETs a URL (with the session cookie on the service's own origin), without following redirects. */
  async get(url: string): Promise<{ status: number; location: string | null; html: string }> {
    const own = url.startsWith(this.serviceUrl);
    const res = await fetch(url, { redirect: 'manual', headers: own ? { cookie: this.cookie } : {} });
    return { status: res.status, location: res.headers.get('location'), html: await res.text() };
  }

  /** Follows redirects from `url` until a page answers; the last URL and the page. */
  async follow(url: string, limit = 10): Promise<{ url: string; status: number; html: string }> {
    let at = url;
    for (let i = 0; i < limit; i++) {
      const page = await this.get(at);
      if (!page.location) return { url: at, status: page.status, html: page.html };
      at = new URL(page.location, at).href;
    }
    throw new Error(`more than ${limit} redirects from ${url}`);
  }

  /**
   * At a sandbox's consent page: posts its form as a person who ticks `fields` and presses the decision's
   * button; then follows the provider's redirect back into the service until a page answers.
   */
  async consent(consentUrl: string, consentHtml: string, decision: 'accept' | 'cancel' = 'accept', fields: Array<[string, string]> = []) {
    const action = /<form method="post" action="([^"]+)"/.exec(consentHtml)?.[1];
    expect(action, consentHtml).toBeTruthy();
    const target = new URL(action!, consentUrl).href;
    const res = await fetch(target, {
      method: 'POST',
      redirect: 'manual',
      headers: { 'content-type': 'application/x-www-form-urlencoded', ...(target.startsWith(this.serviceUrl) ? { cookie: this.cookie } : {}) },
      body: new URLSearchParams([['request', requestIdOf(consentHtml)], ...fields, ['decision', decision]]).toString(),
    });
    expect(res.status, await res.clone().text()).toBe(302);
    return this.follow(new URL(res.headers.get('location')!, target).href);
  }
}
