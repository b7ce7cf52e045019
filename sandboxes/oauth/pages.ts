// The consent and error pages of the OAuth sandboxes: plain server-rendered HTML, no script, no external
// resource, one inline style allowed by its hash, accessible labels. Links and form actions are relative, so
// the pages work wherever they are mounted (sandboxes/oauth/oauth.ts).
import { createHash } from 'node:crypto';
import type http from 'node:http';
import { readBody } from '../harness.ts';
import type { SandboxClock } from './clock.ts';
import { randomToken } from './grants.ts';

/** Markup that is already safe (built by `html`). */
export class SafeHtml {
  constructor(readonly text: string) {}
}

const escape = (text: string) => text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

function render(value: unknown): string {
  if (value instanceof SafeHtml) return value.text;
  if (Array.isArray(value)) return value.map(render).join('');
  if (value === undefined || value === null || value === false) return '';
  return escape(String(value));
}

/** A template whose values are escaped unless they are SafeHtml (arrays are joined). */
export function html(strings: TemplateStringsArray, ...values: unknown[]): SafeHtml {
  return new SafeHtml(strings.reduce((out, s, i) => out + s + (i < values.length ? render(values[i]) : ''), ''));
}

/** How a provider's pages look: its name in the header and its accent colour (buttons, focus rings). */
export interface Brand {
  name: string;
  accent: string;
}

const style = (accent: string) => `
*{box-sizing:border-box}
body{margin:0;font:16px/1.5 system-ui,-apple-system,"Segoe UI",sans-serif;color:#172b4d;background:#f4f5f7}
main{max-width:34rem;margin:2rem auto;padding:2rem;background:#fff;border-radius:8px;box-shadow:0 1px 3px rgba(0,0,0,.2)}
header{font-weight:700;color:${accent};margin-bottom:1rem}
h1{font-size:1.35rem;line-height:1.3;margin:0 0 1rem}
h2,legend{font-size:1rem;font-weight:600;margin:1.25rem 0 .5rem;padding:0}
fieldset{border:0;margin:0;padding:0}
ul{padding-left:1.25rem;margin:.25rem 0}
label{display:flex;gap:.5rem;align-items:center;padding:.25rem 0}
.muted{color:#5e6c84;font-size:.9rem}
.actions{display:flex;gap:.75rem;justify-content:flex-end;margin-top:1.5rem}
button{font:inherit;padding:.5rem 1.1rem;border-radius:4px;border:1px solid ${accent};cursor:pointer}
button.primary{background:${accent};color:#fff}
button.secondary{background:#fff;color:${accent}}
button:focus-visible,input:focus-visible{outline:3px solid ${accent};outline-offset:2px}
.error{border-left:4px solid #de350b;padding-left:1rem}
@media (max-width:40rem){main{margin:0;border-radius:0;min-height:100vh}}
`;

/** Sends a whole page with headers that keep it from being framed, cached or leaking the URL onward. */
export function sendPage(res: http.ServerResponse, status: number, brand: Brand, title: string, main: SafeHtml): void {
  const css = style(brand.accent);
  const hash = createHash('sha256').update(css).digest('base64');
  const body = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escape(title)} | ${escape(brand.name)}</title><style>${css}</style></head>
<body><main><header>${escape(brand.name)}</header>${main.text}</main></body></html>`;
  res.writeHead(status, {
    'content-type': 'text/html; charset=utf-8',
    'content-length': Buffer.byteLength(body),
    // No form-action: the consent form's answer redirects to the app's own origin, which a form-action list would block.
    'content-security-policy': `default-src 'none'; style-src 'sha256-${hash}'; base-uri 'none'; frame-ancestors 'none'`,
    'x-frame-options': 'DENY',
    'referrer-policy': 'no-referrer',
    'cache-control': 'no-store',
    'x-content-type-options': 'nosniff',
  });
  res.end(body);
}

/** A page that says what is wrong with the authorization request (never a redirect to an unchecked URI). */
export function sendErrorPage(res: http.ServerResponse, status: number, brand: Brand, message: string, detail?: string): void {
  sendPage(
    res,
    status,
    brand,
    'Something went wrong',
    html`<div class="error" role="alert">
      <h1>Something went wrong</h1>
      <p>${message}</p>
      ${detail ? html`<p class="muted">${detail}</p>` : ''}
    </div>`,
  );
}

/** Sends the browser to the app's redirect URI with these parameters added to its query. */
export function redirectTo(res: http.ServerResponse, redirectUri: string, params: Record<string, string | undefined>): void {
  const target = new URL(redirectUri);
  for (const [name, value] of Object.entries(params)) if (value !== undefined) target.searchParams.append(name, value);
  res.writeHead(302, { location: target.toString(), 'cache-control': 'no-store', 'content-length': 0 });
  res.end();
}

/**
 * The authorization requests a consent page was shown for, by the single-use id its form posts back: the form
 * carries nothing else the sandbox would have to trust.
 */
export class ConsentRequests<T> {
  private readonly pending = new Map<string, { request: T; expiresAt: number }>();

  constructor(
    private readonly clock: SandboxClock,
    private readonly ttlMs: number,
  ) {}

  open(request: T): string {
    const now = this.clock.now();
    for (const [id, entry] of this.pending) if (entry.expiresAt <= now) this.pending.delete(id);
    const id = randomToken(18);
    this.pending.set(id, { request, expiresAt: now + this.ttlMs });
    return id;
  }

  take(id: string | null): T | undefined {
    if (!id) return undefined;
    const entry = this.pending.get(id);
    this.pending.delete(id);
    return entry && entry.expiresAt > this.clock.now() ? entry.request : undefined;
  }
}

/** The consent form's fields (application/x-www-form-urlencoded, as a browser posts it). */
export async function readForm(req: http.IncomingMessage): Promise<URLSearchParams> {
  return new URLSearchParams(await readBody(req));
}

/** The hidden field and the two buttons every consent form ends with. */
export function decisionButtons(requestId: string, accept: string, cancel: string): SafeHtml {
  return html`<input type="hidden" name="request" value="${requestId}" />
    <div class="actions">
      <button type="submit" class="secondary" name="decision" value="cancel">${cancel}</button>
      <button type="submit" class="primary" name="decision" value="accept">${accept}</button>
    </div>`;
}
