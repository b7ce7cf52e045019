// The engine on its own (runtime/engine/engine.ts): the fixture provider of test/fixtures/specs loaded by the
// real loader, the real outbound client, and the fixture's loopback upstream (test/support/upstream.ts). No
// service, store or billing: what a base tool does with its arguments, steps, answers and failures, and
// whether each failure gives the credits back (ToolError.refund, which the call pipeline obeys).
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pluginRegistry } from '../plugins/registry.ts';
import { type AccountCredentials, Engine } from '../runtime/engine/engine.ts';
import { parseAllowList } from '../runtime/http/guard.ts';
import { type HttpClient, createHttpClient } from '../runtime/http/client.ts';
import { ToolError } from '../runtime/tool-error.ts';
import type { Catalog } from '../runtime/toolspec/catalog.ts';
import { loadCatalog } from '../runtime/toolspec/loader.ts';
import { type DemoUpstream, startDemoUpstream } from './support/upstream.ts';

let upstream: DemoUpstream;
let http: HttpClient;
let engine: Engine;
let catalog: Catalog;
let account: AccountCredentials;

beforeAll(async () => {
  upstream = await startDemoUpstream();
  catalog = await loadCatalog(path.resolve('test/fixtures/specs'), pluginRegistry);
  // No retries: retrying is the client's own behaviour, tested in http-client.test.ts.
  http = createHttpClient({ timeoutMs: 5000, maxResponseBytes: 1 << 20, allow: parseAllowList('loopback'), retries: 0, maxRetryAfterMs: 0 });
  engine = new Engine(http, { defaultTimeoutMs: 5000 });
  account = { fields: { base_url: upstream.url, token: upstream.token } };
});

afterAll(async () => {
  http?.close();
  await upstream?.close();
});

const tool = (id: string) => catalog.tools.get(id)!;

/** Validates and runs a tool; resolves to its result, or to the ToolError it failed with. */
async function run(id: string, args: Record<string, unknown>, withAccount: AccountCredentials | null = account) {
  try {
    return { result: await engine.run(tool(id), engine.validateArguments(tool(id), args), withAccount) };
  } catch (err) {
    if (!(err instanceof ToolError)) throw err;
    return { error: err };
  }
}

/** The upstream's requests while `fn` ran, as method and path. */
async function requestsDuring(fn: () => Promise<unknown>): Promise<string[]> {
  const before = upstream.requests.length;
  await fn();
  return upstream.requests.slice(before).map((r) => `${r.method} ${r.path}`);
}

describe('arguments', () => {
  it('fills in schema defaults and names every bad field, without echoing values', () => {
    expect(engine.validateArguments(tool('demo_echo'), { message: 'hi' })).toEqual({ message: 'hi', status: 200 });
    let error: unknown;
    try {
      engine.validateArguments(tool('demo_echo'), { status: 99, channel: 'secret-channel-name', extra: 1 });
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(ToolError);
    expect((error as ToolError).code).toBe('invalid_arguments');
    expect((error as ToolError).message).toBe(
      'Invalid arguments: "message" is required; "extra" is not a parameter of this tool; "status" must be >= 200; "channel" must be one of: general, random',
    );
  });

  it('encodes a path value and refuses "." and ".." as one, sending nothing', async () => {
    expect(await requestsDuring(() => run('demo_move', { id: 'a b/c' }))).toEqual(['GET /items/a%20b%2Fc']);
    for (const id of ['.', '..']) {
      const sent = await requestsDuring(async () => {
        const { error } = await run('demo_move', { id });
        expect(error?.code).toBe('invalid_arguments');
        expect(error?.message).toBe(`"${id}" is not allowed as a path value`);
      });
      expect(sent).toEqual([]);
    }
  });
});

describe('steps and the response map', () => {
  it('skips the steps whose `when` is false and maps the answer with helpers', async () => {
    let outcome;
    expect(await requestsDuring(async () => (outcome = await run('demo_move', { id: 'box' })))).toEqual(['GET /items/box']);
    expect(outcome).toEqual({ result: { id: 'box', title: 'BLUE BOX', place: 'shelf', moved: false, tags: ['red', 'small'] } });
  });

  it('runs a step when its `when` holds, with a body built from an earlier step', async () => {
    let outcome;
    const sent = await requestsDuring(async () => (outcome = await run('demo_move', { id: 'box', to: 'attic' })));
    expect(sent).toEqual(['GET /items/box', 'POST /items/box/move']);
    expect(JSON.parse(upstream.requests.at(-1)!.body)).toEqual({ to: 'attic', from: 'shelf' });
    expect(outcome).toEqual({ result: { id: 'box', title: 'BLUE BOX', place: 'attic', moved: true, tags: ['red', 'small'] } });
  });

  it('sends the account credentials from the provider auth section', async () => {
    await run('demo_move', { id: 'box' });
    expect(upstream.requests.at(-1)!.headers.authorization).toBe(`Bearer ${upstream.token}`);
  });

  it('reports progress by step title for a multi-step tool', async () => {
    const progress: string[] = [];
    await engine.run(tool('demo_move'), { id: 'box', to: 'attic', note: 'ok' }, account, { progress: (m) => progress.push(m) });
    expect(progress).toEqual(['Read the item', 'Move the item', 'Add the note']);
  });
});

describe('failures: the error families and whether the credits go back', () => {
  it('maps a status with the tool rule of that step: message, provider detail, hint; kept', async () => {
    const { error } = await run('demo_move', { id: 'nothing' });
    expect(error?.toJSON()).toEqual({
      code: 'item_not_found',
      message: 'Item nothing not found: no item nothing. Check the id.',
      retryable: false,
      provider_status: 404,
    });
    expect(error?.refund).toBe(false);
  });

  it('a failure after a step was applied says what was and was not applied, and is kept', async () => {
    const moved = await run('demo_move', { id: 'box', to: 'nowhere', note: 'x' });
    expect(moved.error?.code).toBe('move_refused');
    expect(moved.error?.message).toBe(
      'The item cannot be moved to nowhere: no such place. Applied before the failure: Read the item. Not applied: Move the item, Add the note.',
    );
    expect(moved.error?.refund).toBe(false);
    // Even a transient failure (500) is kept once something was applied: retrying would apply it twice.
    const noted = await run('demo_move', { id: 'box', to: 'attic', note: 'fail' });
    expect(noted.error?.toJSON()).toEqual({
      code: 'provider_error',
      message: 'The provider failed to answer: notes are down. Applied before the failure: Read the item, Move the item. Not applied: Add the note.',
      retryable: false,
      provider_status: 500,
    });
    expect(noted.error?.refund).toBe(false);
  });

  it("uses the provider's rules by provider code, after the tool's", async () => {
    const { error } = await run('demo_move', { id: 'locked' });
    expect(error?.toJSON()).toEqual({ code: 'item_locked', message: 'The item is locked: locked by ada', retryable: false, provider_status: 423 });
    expect(error?.refund).toBe(false);
  });

  it('falls back to the default families: 429 and 5xx are retryable and refunded, other 4xx kept', async () => {
    const busy = (await run('demo_move', { id: 'busy' })).error;
    expect(busy?.toJSON()).toEqual({
      code: 'rate_limited',
      message: 'Rate limited by the provider: slow down (retry after 7 s)',
      retryable: true,
      provider_status: 429,
    });
    expect(busy?.refund).toBe(true);
    const down = (await run('demo_move', { id: 'down' })).error;
    expect(down?.toJSON()).toEqual({ code: 'provider_error', message: 'The provider failed to answer: maintenance', retryable: true, provider_status: 503 });
    expect(down?.refund).toBe(true);
    const refused = (await run('demo_echo', { message: 'x', status: 422 })).error;
    expect(refused?.toJSON()).toEqual({
      code: 'bad_request',
      message: 'The provider refused the request: upstream failed with 422',
      retryable: false,
      provider_status: 422,
    });
    expect(refused?.refund).toBe(false);
  });

  it('an answer that does not fit the output schema is unexpected_response, refunded', async () => {
    const { error } = await run('demo_move', { id: 'shapeless' });
    expect(error?.code).toBe('unexpected_response');
    expect(error?.message).toBe('The provider\'s answer did not have the expected shape: "title" is required; "place" is required');
    expect(error?.refund).toBe(true);
  });

  it('redacts the account secrets from provider answers', async () => {
    const { error } = await run('demo_move', { id: 'leaky' });
    expect(error?.message).toBe('The provider refused the request: refused the request signed Bearer [redacted]');
    expect(error?.message).not.toContain(upstream.token);
  });

  it('no answer at all (nothing listens) is a network failure, refunded', async () => {
    const gone = { fields: { base_url: 'http://127.0.0.1:9', token: upstream.token } };
    const { error } = await run('demo_ping', {}, gone);
    expect(error?.code).toBe('network_error');
    expect(error?.refund).toBe(true);
  });

  it('a tool that needs an account refuses to run without one', async () => {
    const { error } = await run('demo_ping', {}, null);
    expect(error?.toJSON()).toEqual({
      code: 'account_required',
      message: 'The tool demo_ping needs a stored demo account bound to it',
      retryable: false,
      provider_status: null,
    });
  });
});
