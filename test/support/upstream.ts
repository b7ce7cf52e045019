// A tiny loopback upstream for the demo provider of test/fixtures/specs (engine, access, billing, custom tools, bench).
import type { ServerResponse } from 'node:http';
import path from 'node:path';
import { afterAll, beforeAll } from 'vitest';
import { type RecordedRequest, type RunningSandbox, listenOnLoopback, readBody, sendJson } from '../../sandboxes/harness.ts';

/** The service's environment for the fixture provider's specs. */
export const DEMO_SPECS = { TOOL_SPECS_DIR: path.resolve('test/fixtures/specs') };

/** The `accounts` of createServer: one account of the fixture provider, labelled `demo`, on this upstream. */
export const demoAccounts = (upstream: DemoUpstream) => ({ demo: { kind: 'demo', name: 'Demo', base_url: upstream.url, token: upstream.token } });

export interface DemoUpstream extends RunningSandbox {
  token: string;
  requests: RecordedRequest[];
  /** Answers after this many milliseconds (for concurrency tests). */
  delayMs: number;
  /** The next this many requests are answered 503 (a provider's passing outage; retries). */
  failNext: number;
}

/**
 * The fixture provider's upstream for a whole suite: started before its tests, closed after. The returned
 * object is filled in once it runs: read `upstream.url` inside tests and hooks, not at the top of the file.
 */
export function useDemoUpstream(): { upstream: DemoUpstream; account: () => ReturnType<typeof demoAccounts> } {
  const holder = {} as { upstream: DemoUpstream; account: () => ReturnType<typeof demoAccounts> };
  holder.account = () => demoAccounts(holder.upstream);
  beforeAll(async () => {
    holder.upstream = await startDemoUpstream();
  });
  afterAll(async () => {
    await holder.upstream?.close();
  });
  return holder;
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
    const item = /^\/items\/([^/]+)(?:\/(move|notes))?$/.exec(url.pathname);
    if (item)
      return items(res, decodeURIComponent(item[1]), item[2], body ? (JSON.parse(body) as Record<string, string>) : {}, req.headers.authorization ?? '');
    sendJson(res, 404, { message: 'no such route' });
  });
  upstream.url = running.url;
  upstream.close = running.close;
  return upstream;
}

/**
 * The items of demo_move (test/fixtures/specs/demo/move.yaml), each answering in one way: `box` is an item,
 * `locked` answers 423 with the provider code ITEM_LOCKED, `busy` 429 with Retry-After, `down` 503,
 * `shapeless` 200 without the fields the tool promises, `leaky` 400 repeating the credential it was sent;
 * moving anything `to: nowhere` is 409; a note `fail` is 500. Any other id is 404.
 */
function items(res: ServerResponse, id: string, action: string | undefined, body: Record<string, string>, authorization: string): void {
  if (action === 'move') return body.to === 'nowhere' ? sendJson(res, 409, { message: 'no such place' }) : sendJson(res, 200, { id, place: body.to });
  if (action === 'notes') return body.text === 'fail' ? sendJson(res, 500, { message: 'notes are down' }) : sendJson(res, 201, { id });
  switch (id) {
    case 'box':
    case 'a b/c':
      return sendJson(res, 200, { id, title: 'Blue box', place: 'shelf', tags: 'red,small' });
    case 'locked':
      return sendJson(res, 423, { code: 'ITEM_LOCKED', message: 'locked by ada' });
    case 'busy':
      res.setHeader('retry-after', '7');
      return sendJson(res, 429, { message: 'slow down' });
    case 'down':
      return sendJson(res, 503, { message: 'maintenance' });
    case 'leaky':
      return sendJson(res, 400, { message: `refused the request signed ${authorization}` });
    case 'shapeless':
      return sendJson(res, 200, { id });
    default:
      return sendJson(res, 404, { message: `no item ${id}` });
  }
}
