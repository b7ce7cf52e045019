// The spec language of issue 29, run by the real engine and outbound client against the exchanges' loopback
// stand-in: pagination (cursor, page, offset; Link in github-provider.test.ts), lists mapped item by item,
// error rules reading the answer, error_body, provider headers from account fields. Then the exchange runner's
// own reports, `npm run check:specs` as a command, and the pure parts (Link headers, detail reading).
import { execFile } from 'node:child_process';
import { cp, mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { pluginRegistry } from '../plugins/registry.ts';
import { providerDetail } from '../runtime/engine/errors.ts';
import { formatFailure, runExchanges } from '../runtime/engine/exchange-runner.ts';
import { nextLink } from '../runtime/engine/pagination.ts';
import { loadCatalog } from '../runtime/toolspec/loader.ts';

const SHOP = path.resolve('test/fixtures/language-specs');

/** A copy of the shop fixture with `edit` applied to one of its files. */
async function shopWith(file: string, edit: (text: string) => string): Promise<string> {
  const dir = await mkdtemp(path.join(tmpdir(), 'shop-'));
  await cp(SHOP, dir, { recursive: true });
  const at = path.join(dir, 'shop', file);
  await writeFile(at, edit(await readFile(at, 'utf8')));
  return dir;
}

describe('the language, through the exchanges of a fixture provider that uses every new key', () => {
  it('pages by cursor, page number and offset (with a size budget), maps lists, reads errors, sends headers from fields', async () => {
    const report = await runExchanges(await loadCatalog(SHOP, pluginRegistry));
    expect(report.failures.map(formatFailure)).toEqual([]);
    expect(report).toMatchObject({ ran: 14, tools: 4 });
  });
});

describe('the exchange runner', () => {
  it('says what differs, where the exchange is written', async () => {
    const dir = await shopWith('charge.exchanges.yaml', (text) =>
      text
        .replace('body: { amount: 500, source: tok_visa }', 'body: { amount: 501, source: tok_visa }')
        .replace('path: /v2/charges\n        body: { amount: 1,', 'path: /v2/charge\n        body: { amount: 1,')
        .replace('message: "The shop refused the charge: source: No such token"', 'message: "something else"'),
    );
    const report = await runExchanges(await loadCatalog(dir, pluginRegistry, { relativeTo: dir }), { only: new Set(['shop_charge']) });
    expect(report.failures.map(formatFailure)).toEqual([
      'shop/charge.exchanges.yaml:4:5 shop_charge "charges": request 1: expected the body {"amount":501,"source":"tok_visa"}, got {"amount":500,"source":"tok_visa"}',
      'shop/charge.exchanges.yaml:12:5 shop_charge "a rule chosen by a condition over the body, its detail from a pointer, its hint from the answer": request 1: expected POST /v2/charge, got POST /v2/charges',
      'shop/charge.exchanges.yaml:20:5 shop_charge "a detail written as a template": error message: expected "something else", got "The shop refused the charge: source: No such token"',
    ]);
    expect(report.ran).toBe(5);

    const result = await shopWith('charge.exchanges.yaml', (text) =>
      text.replace('result: { id: ch_1, status: succeeded }', 'result: { id: ch_1, status: failed }'),
    );
    const [failure] = (await runExchanges(await loadCatalog(result, pluginRegistry, { relativeTo: result }), { only: new Set(['shop_charge']) })).failures;
    expect(failure.problems).toEqual(['result at /status: expected "failed", got "succeeded"']);
  });

  it('reports a request never sent, one too many, and an error where a result was expected', async () => {
    const dir = await shopWith('search_products.exchanges.yaml', (text) =>
      // The first exchange loses its third request (the tool sends it anyway); the second gets one more.
      text
        .replace(/ {6}- method: POST\n {8}path: \/v2\/products\/search\n {8}body: \{ q: tea, per_page: 2, page: 3 \}\n.*\n/, '')
        .replace(
          '        answer: { body: { products: [{ name: Rooibos }], total: 7 } }\n',
          '        answer: { body: { products: [{ name: Rooibos }], total: 7 } }\n      - method: GET\n        path: /v2/more\n        answer: { status: 204 }\n',
        ),
    );
    const report = await runExchanges(await loadCatalog(dir, pluginRegistry, { relativeTo: dir }), { only: new Set(['shop_search_products']) });
    expect(report.failures.map((f) => f.problems)).toEqual([
      ['request 3 (POST /v2/products/search) is not in the exchange, which has 2'],
      ['request 2 (GET /v2/more) was never sent'],
    ]);

    const wrong = await shopWith('charge.exchanges.yaml', (text) => text.replace('status: 201, body: { id: ch_1', 'status: 500, body: { id: ch_1'));
    const [failure] = (await runExchanges(await loadCatalog(wrong, pluginRegistry, { relativeTo: wrong }), { only: new Set(['shop_charge']) })).failures;
    expect(failure.problems).toEqual(['expected a result, got the error provider_error: The provider failed to answer']);
  });
});

describe('npm run check:specs', () => {
  const run = promisify(execFile);
  const check = (...args: string[]) =>
    run(process.execPath, ['--import', 'tsx', 'runtime/toolspec/check.ts', ...args], { env: { ...process.env, TOOL_SPECS_DIR: '' } }).then(
      (r) => ({ code: 0, out: r.stdout + r.stderr }),
      (e: { code: number; stdout: string; stderr: string }) => ({ code: e.code, out: e.stdout + e.stderr }),
    );

  it('lints the folder it is given, and runs its exchanges with --exchanges', async () => {
    expect(await check('test/fixtures/language-specs', '--exchanges')).toEqual({
      code: 0,
      out: 'tool specs OK: 1 providers, 4 tools (test/fixtures/language-specs)\nexchanges OK: 14 exchanges of 4 tools\n',
    });
    const broken = await check('test/fixtures/bad-specs/no-provider');
    expect(broken.code).toBe(1);
    expect(broken.out).toContain('test/fixtures/bad-specs/no-provider/orphans/get.yaml:3:11 /provider unknown provider "orphans" (declared: demo)');
  }, 60_000);
});

describe('Link headers (RFC 8288)', () => {
  it('finds the rel="next" URL whatever the order, quoting, case and other relations', () => {
    const github =
      '<https://api.github.com/repositories/1300192/issues?page=2>; rel="next", <https://api.github.com/repositories/1300192/issues?page=515>; rel="last"';
    expect(nextLink(github)).toBe('https://api.github.com/repositories/1300192/issues?page=2');
    expect(nextLink('<https://x.example/a?page=1>; rel="prev first", <https://x.example/a?page=3>; rel="last next"')).toBe('https://x.example/a?page=3');
    expect(nextLink('</items?cursor=b>; title="a, b; c"; rel=next')).toBe('/items?cursor=b');
    expect(nextLink('<https://x.example/a>; REL="Next"')).toBe('https://x.example/a');
    expect(nextLink(['<https://x.example/1>; rel="prev"', '<https://x.example/3>; rel="next"'])).toBe('https://x.example/3');
    expect(nextLink('<https://x.example/next-page>; rel="prev"')).toBeUndefined();
    expect(nextLink(undefined)).toBeUndefined();
  });
});

describe("a provider's detail, read the built-in way", () => {
  it('reads errors lists (GitHub, JSON:API, GraphQL), error objects and OAuth errors, once each', () => {
    expect(
      providerDetail({
        message: 'Validation Failed',
        errors: [
          { resource: 'Issue', field: 'assignees', code: 'invalid' },
          { resource: 'Issue', code: 'custom', message: 'title is too long' },
        ],
      }),
    ).toBe('Validation Failed; Issue.assignees: invalid; title is too long');
    expect(providerDetail({ errors: [{ status: '422', source: { pointer: '/data/attributes/email' }, title: 'Invalid Attribute', detail: 'is taken' }] })).toBe(
      '/data/attributes/email: is taken',
    );
    expect(providerDetail({ errors: [{ message: 'Field "nme" does not exist', path: ['query', 'user'] }] })).toBe('query.user: Field "nme" does not exist');
    expect(providerDetail({ error: { code: 400, message: 'Invalid value', errors: [{ message: 'Invalid value', reason: 'invalid' }] } })).toBe('Invalid value');
    expect(providerDetail({ error: 'invalid_grant', error_description: 'The code has expired' })).toBe('invalid_grant; The code has expired');
    // Jira's and PostgREST's shapes read as before.
    expect(providerDetail({ errorMessages: ['Issue does not exist'], errors: { summary: 'required' } })).toBe('Issue does not exist; summary: required');
    expect(providerDetail({ code: '23505', message: 'duplicate key', details: 'Key (email)=(a) exists.', hint: null })).toBe(
      'duplicate key; Key (email)=(a) exists.',
    );
    expect(providerDetail([{ message: 'a list at the top' }])).toBe('a list at the top');
  });
});
