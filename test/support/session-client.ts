// A browser-like client of the management API for tests that look at cookies and statuses: it keeps the
// session cookie and sends the page's Origin and the session's CSRF token, as the dashboard's pages do.
import type { TestService } from './service.ts';

/** A browser-like client: keeps the session cookie and sends the page's Origin and CSRF token. */
export class Browser {
  cookie = '';
  csrf = '';
  setCookies: string[] = [];
  constructor(
    private readonly svc: TestService,
    readonly origin = svc.url,
  ) {}

  async send(method: string, p: string, body?: unknown, extra: Record<string, string> = {}) {
    const headers: Record<string, string> = { origin: this.origin, ...extra };
    if (this.cookie) headers.cookie = this.cookie;
    if (this.csrf && !('x-csrf-token' in extra)) headers['x-csrf-token'] = this.csrf;
    if (body !== undefined) headers['content-type'] = 'application/json';
    const res = await fetch(this.svc.url + p, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
    this.setCookies = res.headers.getSetCookie();
    const session = this.setCookies.find((c) => c.startsWith('ts_session='));
    if (session) this.cookie = session.split(';')[0];
    const text = await res.text();
    const json = text ? JSON.parse(text) : null;
    if (json?.csrf_token) this.csrf = json.csrf_token;
    return { status: res.status, body: json, headers: res.headers };
  }
}
