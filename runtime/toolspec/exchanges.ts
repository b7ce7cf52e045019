// Exchanges: a tool's calls written down beside its spec (<tool file>.exchanges.yaml), each as the arguments,
// the requests the tool must send with the provider's canned answers, and the result or error the client must
// get. The runner (runtime/engine/exchange-runner.ts, `npm run check:specs -- --exchanges`) plays them against
// a loopback stand-in; the sandbox of a provider that has none of its own (runtime/sandbox/replay.ts) answers
// from them. This module loads them and decides whether a request is the one an exchange expects.
import { isDeepStrictEqual } from 'node:util';
import { accountFieldProblem } from './account-fields.ts';
import type { BaseTool } from './catalog.ts';
import type { SourceFile } from './source-file.ts';
import type { ExchangeRequestSpec, ExchangeSpec, ExchangesSpec } from './types.ts';

/** The exchanges of one tool, ready to run. */
export interface ToolExchanges {
  file: string;
  toolId: string;
  /**
   * The account they run with: every field of the provider, the base URL field as the client would name the
   * provider (https://api.github.com). Runners serve that URL's path on their own origin.
   */
  account: Readonly<Record<string, string>>;
  exchanges: LoadedExchange[];
}

export interface LoadedExchange extends ExchangeSpec {
  /** Where it is written (the item of `exchanges`), for reports. */
  line: number;
  column: number;
}

/** A request as a stand-in of the provider received it. */
export interface ReceivedRequest {
  method: string;
  /** The path as received, percent-encoded, without the query. */
  path: string;
  query: URLSearchParams;
  headers: Readonly<Record<string, string | string[] | undefined>>;
  /** The body's text ('' for none). */
  body: string;
}

/** A canned answer, ready to send. */
export interface CannedAnswer {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/** Checks an exchanges file against its tool; returns what to run, or undefined when it has problems. */
export function compileExchanges(src: SourceFile, spec: ExchangesSpec, tool: BaseTool): ToolExchanges | undefined {
  const before = src.issues.length;
  const provider = tool.provider.spec;
  const fields = provider.account.fields;
  for (const name of Object.keys(spec.account ?? {})) {
    if (!fields.some((f) => f.name === name)) {
      src.report(
        ['account', name],
        `"${name}" is not a field of a ${provider.account.kind} account (fields: ${fields.map((f) => f.name).join(', ')})`,
        undefined,
        true,
      );
    }
  }
  const account: Record<string, string> = {};
  for (const f of fields) {
    const given = spec.account?.[f.name];
    const value = given ?? f.default ?? (f.name === provider.base_url.field ? `https://${provider.id}.example` : placeholder(f));
    const problem = accountFieldProblem(f, value);
    if (problem && given !== undefined) src.report(['account', f.name], problem);
    else if (problem) src.report([], `give account.${f.name} a value for the exchanges: the placeholder "${value}" does not do (${problem})`);
    account[f.name] = value;
  }
  const names = new Set<string>();
  spec.exchanges.forEach((x, i) => {
    if (names.has(x.name)) src.report(['exchanges', String(i), 'name'], `the exchange "${x.name}" is named twice in this file`);
    names.add(x.name);
    if (x.result !== undefined && x.error !== undefined) src.report(['exchanges', String(i)], 'an exchange expects a result or an error, not both');
  });
  if (src.issues.length > before) return undefined;
  const exchanges = spec.exchanges.map((x, i) => ({ ...x, ...src.position(['exchanges', String(i)]) }));
  return { file: src.file, toolId: tool.spec.id, account: Object.freeze(account), exchanges };
}

function placeholder(f: { name: string; secret?: boolean; format?: string }): string {
  if (f.format === 'email') return 'someone@example.com';
  if (f.format === 'url') return 'https://example.com';
  return `example-${f.name}`;
}

/**
 * What differs between the request an exchange expects and the one received, in words; null when it is the
 * one. Headers are compared only when `headers` is true (a sandbox answers whatever credentials it is sent).
 */
export function requestDifference(expected: ExchangeRequestSpec, got: ReceivedRequest, headers = true): string | null {
  if (got.method !== expected.method || got.path !== expected.path) return `expected ${expected.method} ${expected.path}, got ${got.method} ${got.path}`;
  const wanted = Object.entries(expected.query ?? {}).map(([k, v]) => [k, Array.isArray(v) ? v : [v]] as const);
  const names = new Set(got.query.keys());
  for (const [name, values] of wanted) {
    const sent = got.query.getAll(name);
    if (!isDeepStrictEqual(sent, values)) return `query parameter ${name}: expected ${describe(values)}, got ${sent.length ? describe(sent) : 'none'}`;
    names.delete(name);
  }
  if (names.size) return `unexpected query parameter(s): ${[...names].map((n) => `${n}=${got.query.getAll(n).join(',')}`).join(', ')}`;
  if (headers) {
    for (const [name, value] of Object.entries(expected.headers ?? {})) {
      const sent = got.headers[name.toLowerCase()];
      const text = Array.isArray(sent) ? sent.join(', ') : sent;
      if (text !== value) return `header ${name}: expected ${JSON.stringify(value)}, got ${text === undefined ? 'none' : JSON.stringify(text)}`;
    }
  }
  return bodyDifference(expected.body, got.body);
}

function bodyDifference(expected: unknown, text: string): string | null {
  if (expected === undefined) return text === '' ? null : `expected no body, got ${clip(text)}`;
  if (typeof expected === 'string') return text === expected ? null : `expected the body ${clip(expected)}, got ${clip(text) || 'none'}`;
  let sent: unknown;
  try {
    sent = JSON.parse(text);
  } catch {
    return `expected a JSON body, got ${clip(text) || 'none'}`;
  }
  return isDeepStrictEqual(sent, expected) ? null : `expected the body ${clip(JSON.stringify(expected))}, got ${clip(JSON.stringify(sent))}`;
}

const describe = (values: readonly string[]) => values.map((v) => JSON.stringify(v)).join(', ');
const clip = (text: string) => (text.length > 300 ? `${text.slice(0, 300)}…` : text);

/**
 * An exchange's answer as the stand-in sends it. `from` is the origin the exchanges name the provider by and
 * `to` the stand-in's own: links in the answer's headers (Link, Location) then lead back to the stand-in.
 */
export function cannedAnswer(answer: ExchangeRequestSpec['answer'], from: string, to: string): CannedAnswer {
  const headers = Object.fromEntries(Object.entries(answer.headers ?? {}).map(([k, v]) => [k.toLowerCase(), v.split(from).join(to)]));
  const status = answer.status ?? 200;
  if (answer.body === undefined) return { status, headers, body: '' };
  if (typeof answer.body === 'string') return { status, headers: { 'content-type': 'text/plain; charset=utf-8', ...headers }, body: answer.body };
  return { status, headers: { 'content-type': 'application/json; charset=utf-8', ...headers }, body: JSON.stringify(answer.body) };
}

/** The answer of the first request of any exchange that is the one received (headers aside), if any. */
export function replay(files: Iterable<ToolExchanges>, got: ReceivedRequest): ExchangeRequestSpec['answer'] | undefined {
  for (const file of files) {
    for (const exchange of file.exchanges) {
      for (const request of exchange.requests) if (requestDifference(request, got, false) === null) return request.answer;
    }
  }
  return undefined;
}
