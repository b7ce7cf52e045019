// Runs the exchanges written beside tools (runtime/toolspec/exchanges.ts) offline: each call goes through the
// real engine and the real outbound client to a stand-in of the provider on loopback, which checks every
// request against the exchange and answers the canned answer; the result or error must be the one written.
// Nothing leaves the machine: the stand-in listens on 127.0.0.1 and no host name is sent to a resolver.
import http from 'node:http';
import type { AddressInfo, LookupFunction } from 'node:net';
import { isDeepStrictEqual } from 'node:util';
import { createHttpClient } from '../http/client.ts';
import { parseAllowList } from '../http/guard.ts';
import type { Catalog } from '../toolspec/catalog.ts';
import { type LoadedExchange, type ReceivedRequest, type ToolExchanges, cannedAnswer, requestDifference } from '../toolspec/exchanges.ts';
import { ToolError, type ToolErrorBody } from '../tool-error.ts';
import { Engine } from './engine.ts';

/** One exchange that did not go as written, and why. */
export interface ExchangeFailure {
  file: string;
  line: number;
  column: number;
  tool: string;
  exchange: string;
  problems: string[];
}

export interface ExchangeReport {
  /** Exchanges run, and tools they cover. */
  ran: number;
  tools: number;
  failures: ExchangeFailure[];
}

export function formatFailure(f: ExchangeFailure): string {
  return `${f.file}:${f.line}:${f.column} ${f.tool} "${f.exchange}": ${f.problems.join('; ')}`;
}

/** What the stand-in expects of the exchange being run. */
interface Script {
  requests: LoadedExchange['requests'];
  sent: number;
  problems: string[];
  /** The origin the exchanges name the provider by, and the stand-in's own. */
  from: string;
  to: string;
}

/** No host name is looked up: the exchanges run offline (the stand-in is reached by its address). */
const offline: LookupFunction = (hostname, _options, callback) =>
  process.nextTick(() => callback(Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname} (the exchanges run offline)`), { code: 'ENOTFOUND' }), '', 0));

/** Runs every exchange of the catalog (or of the tools named in `only`), one at a time. */
export async function runExchanges(catalog: Catalog, options: { only?: ReadonlySet<string>; timeoutMs?: number } = {}): Promise<ExchangeReport> {
  let script: Script | undefined;
  const standIn = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const [path, query = ''] = (req.url ?? '/').split(/\?(.*)/s);
      const got: ReceivedRequest = {
        method: req.method ?? 'GET',
        path,
        query: new URLSearchParams(query),
        headers: req.headers,
        body: Buffer.concat(chunks).toString('utf8'),
      };
      const answer = script && answerFor(script, got);
      const out = answer ?? {
        status: 500,
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ message: 'the exchange has no answer for this request' }),
      };
      // No Date header: what a tool passes on of the answer's headers is then the same at every run.
      res.sendDate = false;
      res.writeHead(out.status, Object.assign({}, out.headers, { 'content-length': String(Buffer.byteLength(out.body)) })).end(out.body);
    });
  });
  await new Promise<void>((resolve) => standIn.listen(0, '127.0.0.1', resolve));
  const origin = `http://127.0.0.1:${(standIn.address() as AddressInfo).port}`;
  const timeoutMs = options.timeoutMs ?? 10_000;
  const client = createHttpClient({
    timeoutMs,
    maxResponseBytes: 10 * 1024 * 1024,
    allow: parseAllowList('loopback'),
    retries: 0,
    maxRetryAfterMs: 0,
    resolve: offline,
  });
  const report: ExchangeReport = { ran: 0, tools: 0, failures: [] };
  try {
    for (const file of catalog.exchanges.values()) {
      if (options.only && !options.only.has(file.toolId)) continue;
      report.tools++;
      for (const exchange of file.exchanges) {
        report.ran++;
        const problems = await runOne(catalog, file, exchange, origin, timeoutMs, client, (s) => (script = s));
        if (problems.length) {
          report.failures.push({ file: file.file, line: exchange.line, column: exchange.column, tool: file.toolId, exchange: exchange.name, problems });
        }
      }
    }
  } finally {
    client.close();
    standIn.closeAllConnections();
    await new Promise((resolve) => standIn.close(resolve));
  }
  return report;
}

function answerFor(script: Script, got: ReceivedRequest) {
  const index = script.sent++;
  const expected = script.requests[index];
  if (!expected) {
    script.problems.push(`request ${index + 1} (${got.method} ${got.path}) is not in the exchange, which has ${script.requests.length}`);
    return undefined;
  }
  const difference = requestDifference(expected, got);
  if (difference) {
    script.problems.push(`request ${index + 1}: ${difference}`);
    return undefined;
  }
  return cannedAnswer(expected.answer, script.from, script.to);
}

async function runOne(
  catalog: Catalog,
  file: ToolExchanges,
  exchange: LoadedExchange,
  origin: string,
  timeoutMs: number,
  client: ReturnType<typeof createHttpClient>,
  use: (script: Script) => void,
): Promise<string[]> {
  const tool = catalog.tools.get(file.toolId)!;
  const baseField = tool.provider.spec.base_url.field;
  const named = new URL(file.account[baseField]);
  const script: Script = { requests: exchange.requests, sent: 0, problems: [], from: named.origin, to: origin };
  use(script);
  // A fresh engine per exchange: nothing one exchange resolved (an API base) changes what the next one sends.
  const engine = new Engine(client, { defaultTimeoutMs: timeoutMs });
  const fields = Object.assign({}, file.account, { [baseField]: origin + named.pathname.replace(/\/+$/, '') });
  let outcome: { result: unknown } | { error: ToolErrorBody };
  try {
    const args = engine.validateArguments(tool, structuredClone(exchange.arguments));
    outcome = { result: await engine.run(tool, args, tool.spec.account === 'none' ? null : { fields }) };
  } catch (err) {
    if (!(err instanceof ToolError)) return [`the call failed inside the service: ${(err as Error).stack ?? String(err)}`];
    outcome = { error: err.toJSON() };
  }
  const problems = script.problems;
  // A request that went wrong explains the outcome: the outcome itself is not judged then.
  if (problems.length) return problems;
  if (script.sent < exchange.requests.length) {
    const next = exchange.requests[script.sent];
    problems.push(`request ${script.sent + 1} (${next.method} ${next.path}) was never sent`);
  }
  if ('error' in outcome && !exchange.error) {
    problems.push(`expected ${exchange.result === undefined ? 'success' : 'a result'}, got the error ${outcome.error.code}: ${outcome.error.message}`);
  } else if ('result' in outcome && exchange.error) {
    problems.push(`expected the error ${exchange.error.code}, got a result: ${clip(JSON.stringify(outcome.result))}`);
  } else if ('error' in outcome && exchange.error) {
    for (const [key, value] of Object.entries(exchange.error)) {
      const got = outcome.error[key as keyof ToolErrorBody];
      if (got !== value) problems.push(`error ${key}: expected ${JSON.stringify(value)}, got ${JSON.stringify(got)}`);
    }
  } else if ('result' in outcome && exchange.result !== undefined) {
    const where = firstDifference(exchange.result, outcome.result, '');
    if (where) problems.push(`result ${where}`);
  }
  return problems;
}

/** Where two JSON values first differ, in words ("at /issues/0/title: expected "a", got "b""); null when equal. */
function firstDifference(expected: unknown, got: unknown, at: string): string | null {
  if (isDeepStrictEqual(expected, got)) return null;
  const bothObjects = expected !== null && got !== null && typeof expected === 'object' && typeof got === 'object';
  if (bothObjects && Array.isArray(expected) === Array.isArray(got)) {
    if (Array.isArray(expected) && expected.length !== (got as unknown[]).length) {
      return `at ${at || '/'}: expected ${expected.length} items, got ${(got as unknown[]).length}`;
    }
    const e = expected as Record<string, unknown>;
    const g = got as Record<string, unknown>;
    for (const key of new Set([...Object.keys(e), ...Object.keys(g)])) {
      if (!(key in g)) return `at ${at}/${key}: missing (expected ${clip(JSON.stringify(e[key]))})`;
      if (!(key in e)) return `at ${at}/${key}: not expected (got ${clip(JSON.stringify(g[key]))})`;
      const inner = firstDifference(e[key], g[key], `${at}/${key}`);
      if (inner) return inner;
    }
  }
  return `at ${at || '/'}: expected ${clip(JSON.stringify(expected))}, got ${clip(JSON.stringify(got))}`;
}

const clip = (text: string | undefined) => (text && text.length > 300 ? `${text.slice(0, 300)}…` : String(text));
