// A tiny loopback upstream for the demo provider of test/fixtures/specs (access, billing, bench).
import { type RecordedRequest, type RunningSandbox, listenOnLoopback, readBody, sendJson } from '../../sandboxes/harness.ts';

export interface DemoUpstream extends RunningSandbox {
  token: string;
  requests: RecordedRequest[];
  /** Answers after this many milliseconds (for concurrency tests). */
  delayMs: number;
  /** The next this many requests are answered 503 (a provider's passing outage; retries). */
  failNext: number;
}

export async function startDemoUpstream(token = 'tok_demo_secret_value_1234'): Promise<DemoUpstream> {
  const upstream = { token, requests: [] as RecordedRequest[], delayMs: 0, failNext: 0 } as DemoUpstream;
  const running = await listenOnLoopback(async (req, res) => {
    const url = new URL(req.url ?? '/', 'http://upstream');
    const body = await readBody(req);
    upstream.requests.push({ method: req.method ?? 'GET', path: url.pathname, query: url.searchParams, headers: req.headers, body });
    if (upstream.delayMs) await new Promise((r) => setTimeout(r, upstream.delayMs));
    if (req.headers.authorization !== `Bearer ${token}`) return sendJson(res, 401, { message: 'bad token' });
    if (upstream.failNext > 0) {
      upstream.failNext--;
      return sendJson(res, 503, { message: 'unavailable for a moment' });
    }
    const echo = /^\/echo\/(\d{3})$/.exec(url.pathname);
    if (req.method === 'POST' && echo) {
      const status = Number(echo[1]);
      const parsed = body ? (JSON.parse(body) as Record<string, unknown>) : {};
      return sendJson(res, status, status < 300 ? parsed : { message: `upstream failed with ${status}` });
    }
    if (url.pathname === '/ping' || url.pathname === '/me') return sendJson(res, 200, { ok: true });
    sendJson(res, 404, { message: 'no such route' });
  });
  upstream.url = running.url;
  upstream.close = running.close;
  return upstream;
}
