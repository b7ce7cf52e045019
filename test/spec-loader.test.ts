// The spec loader: every kind of problem is reported with its file, line, column, JSON path and message,
// all at once; the real tool-specs/ folder loads cleanly.
import { mkdtemp, mkdir, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { pluginRegistry } from '../plugins/registry.ts';
import { SpecLoadError, formatIssue, loadCatalog } from '../runtime/toolspec/loader.ts';

const PROVIDER = `id: demo
title: Demo
account:
  kind: demo
  fields:
    - name: base
      title: Base URL
      format: url
    - name: token
      title: Token
      secret: true
base_url:
  field: base
auth:
  headers:
    Authorization: "Bearer {{account.token}}"
`;

const TOOL = (
  extra = '',
  request = `request:
  method: GET
  path: /items/{{args.id}}
`,
) => `id: demo_get
provider: demo
title: Get
description: Gets an item.
credits: 1
annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: true }
input:
  type: object
  additionalProperties: false
  required: [id]
  properties:
    id: { type: string }
output:
  type: object
${request}${extra}`;

/** Writes a spec folder and returns the formatted problems (file paths relative to the folder). */
async function problems(files: Record<string, string>): Promise<string[]> {
  const dir = await mkdtemp(path.join(tmpdir(), 'specs-'));
  await mkdir(path.join(dir, 'demo'));
  for (const [name, text] of Object.entries({ 'provider.yaml': PROVIDER, ...files })) await writeFile(path.join(dir, 'demo', name), text);
  try {
    await loadCatalog(dir, pluginRegistry, { relativeTo: dir });
    return [];
  } catch (err) {
    if (!(err instanceof SpecLoadError)) throw err;
    return err.issues.map(formatIssue);
  }
}

describe('spec loader', () => {
  it('loads the real tool-specs folder', async () => {
    const catalog = await loadCatalog(path.resolve('tool-specs'), pluginRegistry, { schemaPaths: true });
    expect(catalog.tools.size).toBeGreaterThan(0);
    expect([...catalog.tools.keys()]).toEqual([...catalog.tools.keys()].sort());
  });

  it('accepts the fixture tool as written', async () => {
    expect(await problems({ 'get.yaml': TOOL() })).toEqual([]);
  });

  it('reports YAML syntax errors with their position', async () => {
    expect(await problems({ 'get.yaml': 'id: x\ntitle: [unclosed\n' })).toEqual([expect.stringMatching(/^demo\/get\.yaml:3:1 \/ YAML: /)]);
  });

  it('reports an unknown property at the key', async () => {
    expect(await problems({ 'get.yaml': TOOL('colour: red\n') })).toEqual(['demo/get.yaml:18:1 /colour unknown property "colour"']);
  });

  it('reports a missing required property', async () => {
    expect(await problems({ 'get.yaml': TOOL().replace('credits: 1\n', '') })).toEqual(['demo/get.yaml:1:1 / missing required property "credits"']);
  });

  it('reports a value of the wrong type and an enum miss', async () => {
    const text = TOOL().replace('credits: 1', 'credits: two').replace('method: GET', 'method: FETCH');
    expect(await problems({ 'get.yaml': text })).toEqual([
      'demo/get.yaml:5:10 /credits must be integer',
      'demo/get.yaml:16:11 /request/method must be equal to one of the allowed values: "GET", "POST", "PUT", "PATCH", "DELETE"',
    ]);
  });

  it('reports a provider that is not the folder of the tool', async () => {
    expect(await problems({ 'get.yaml': TOOL().replace('provider: demo', 'provider: nope') })).toEqual([
      'demo/get.yaml:2:11 /provider the tool is in the folder "demo", so its provider is "demo", not "nope"',
    ]);
  });

  it('reports a duplicate tool id', async () => {
    expect(await problems({ 'a.yaml': TOOL(), 'b.yaml': TOOL() })).toEqual(['demo/b.yaml:1:5 /id tool "demo_get" is already declared in demo/a.yaml']);
  });

  it('reports an undeclared template variable at its column', async () => {
    const text = TOOL('', 'request:\n  method: GET\n  path: /items/{{args.idd}}\n');
    expect(await problems({ 'get.yaml': text })).toEqual(['demo/get.yaml:17:11 /request/path unknown variable "args.idd" (declared arguments: id)']);
  });

  it('refuses a secret account field outside the provider auth section', async () => {
    const text = TOOL('', 'request:\n  method: GET\n  path: /items\n  query:\n    t: "{{account.token}}"\n');
    expect(await problems({ 'get.yaml': text })).toEqual([
      'demo/get.yaml:19:11 /request/query/t "account.token" is a secret: it can only be used in the provider\'s auth section',
    ]);
  });

  it('refuses prototype access in a template', async () => {
    const text = TOOL('', 'request:\n  method: GET\n  path: /items\n  query:\n    a: "{{args.id.constructor}}"\n');
    expect(await problems({ 'get.yaml': text })).toEqual(['demo/get.yaml:19:11 /request/query/a access to "constructor" is not allowed']);
  });

  it('refuses block helpers, unknown helpers and template syntax errors', async () => {
    const text = TOOL(
      '',
      'request:\n  method: GET\n  path: /items\n  query:\n    a: "{{#if args.id}}x{{/if}}"\n    b: "{{shout args.id}}"\n    c: "{{args.id"\n',
    );
    expect(await problems({ 'get.yaml': text })).toEqual([
      'demo/get.yaml:19:9 /request/query/a a block helper ({{#...}}) is not allowed in templates (write a plugin for logic)',
      'demo/get.yaml:20:9 /request/query/b unknown helper "shout" (allowed: default, join, split, lower, upper, trim, json, eq, ne, not, and, or, exists, concat, length, pick, wrap)',
      expect.stringMatching(/^demo\/get\.yaml:21:9 \/request\/query\/c template syntax error: Parse error/),
    ]);
  });

  it('refuses a path that names a host, a query in the path, and a Host header', async () => {
    const text = TOOL('', 'request:\n  method: GET\n  path: //evil.example/items?x=1\n  headers:\n    Host: evil.example\n');
    expect(await problems({ 'get.yaml': text })).toEqual([
      'demo/get.yaml:17:9 /request/path the path cannot name a host: the host comes only from the account',
      'demo/get.yaml:17:9 /request/path put query parameters under "query", not in the path',
      'demo/get.yaml:19:11 /request/headers/Host the Host header cannot be set',
    ]);
  });

  it('refuses unknown plugins, plugins in the wrong slot and bad plugin options', async () => {
    const text = TOOL(
      'response:\n  plugins:\n    - use: nope.plugin\n    - use: jira.markdown_to_adf\n      with: { pointers: [/x] }\n    - use: jira.adf_to_markdown\n      with: { pointers: 3 }\n',
    );
    expect(await problems({ 'get.yaml': text })).toEqual([
      expect.stringMatching(/^demo\/get\.yaml:20:12 \/response\/plugins\/0\/use unknown plugin "nope\.plugin" \(registered: /),
      'demo/get.yaml:21:12 /response/plugins/1/use plugin "jira.markdown_to_adf" is a request plugin and cannot be used as a response plugin',
      'demo/get.yaml:24:25 /response/plugins/2/with/pointers must be array',
    ]);
  });

  it('requires closed input schemas and valid JSON Schemas', async () => {
    const text = TOOL().replace('  additionalProperties: false\n', '').replace('id: { type: string }', 'id: { type: strung }');
    expect(await problems({ 'get.yaml': text })).toEqual([
      'demo/get.yaml:8:3 /input input must set additionalProperties: false so unknown arguments are refused',
      expect.stringMatching(/^demo\/get\.yaml:8:3 \/input not a valid JSON Schema: /),
    ]);
  });

  it('refuses lists of types, which not every model provider accepts', async () => {
    const text = TOOL().replace('id: { type: string }', 'id: { type: [string, integer] }');
    expect(await problems({ 'get.yaml': text })).toEqual([
      'demo/get.yaml:12:17 /input/properties/id/type a list of types is not portable to every model provider (some accept one type per schema): write anyOf with one type in each branch',
    ]);
  });

  it('requires exactly one of request and steps, and checks step references', async () => {
    const neither = TOOL('', '');
    expect(await problems({ 'get.yaml': neither })).toEqual([
      'demo/get.yaml:1:1 / declare either "request" (one call) or "steps" (several calls), not both and not neither',
    ]);
    const steps = TOOL(
      '',
      'steps:\n  - name: first\n    when: "{{steps.second.status}}"\n    request: { method: GET, path: /a }\n  - name: first\n    request: { method: GET, path: /b }\nerrors:\n  - step: third\n    code: x\n    message: y\n',
    );
    expect(await problems({ 'get.yaml': steps })).toEqual([
      'demo/get.yaml:17:14 /steps/0/when unknown variable "steps.second" (earlier steps: none)',
      'demo/get.yaml:19:11 /steps/1/name step name "first" is used twice',
      'demo/get.yaml:22:11 /errors/0/step unknown step "third"',
    ]);
  });

  it('reports provider problems: unknown and secret base_url fields, bad auth fields, bad patterns', async () => {
    const provider =
      PROVIDER.replace('field: base', 'field: token').replace('      secret: true', '      secret: true\n      pattern: "(["') +
      'verify: { method: GET, path: /me }\n';
    const basic = provider.replace('auth:\n', 'auth:\n  basic: { username: user, password: token }\n');
    expect(await problems({ 'provider.yaml': basic })).toEqual([
      expect.stringMatching(/^demo\/provider\.yaml:12:17 \/account\/fields\/1\/pattern invalid regular expression: /),
      'demo/provider.yaml:14:10 /base_url/field "token" must be a non-secret account field with format: url',
      'demo/provider.yaml:16:22 /auth/basic/username "user" is not an account field',
    ]);
  });

  it('collects the problems of every file in one report', async () => {
    const issues = await problems({ 'a.yaml': TOOL('colour: red\n'), 'b.yaml': TOOL().replace('demo_get', 'demo_b').replace('credits: 1', 'credits: -1') });
    expect(issues).toEqual(['demo/a.yaml:18:1 /colour unknown property "colour"', 'demo/b.yaml:5:10 /credits must be >= 0']);
  });
});

/** The formatted problems of a failing fixture under test/fixtures/bad-specs/ (paths relative to it). */
async function fixtureProblems(name: string): Promise<string[]> {
  const dir = path.resolve('test/fixtures/bad-specs', name);
  try {
    await loadCatalog(dir, pluginRegistry, { relativeTo: dir, schemaPaths: true });
  } catch (err) {
    if (!(err instanceof SpecLoadError)) throw err;
    return err.issues.map(formatIssue);
  }
  throw new Error(`the fixture ${name} loaded without a problem`);
}

describe('spec layout', () => {
  it("names a provider's folder by its id", async () => {
    expect(await fixtureProblems('folder-not-id')).toEqual([
      'jira/provider.yaml:2:5 /id provider "demo" is in the folder "jira": a provider\'s folder is named by its id (demo/provider.yaml)',
    ]);
  });

  it('reports an unknown provider: a folder of tools without a provider.yaml', async () => {
    expect(await fixtureProblems('no-provider')).toEqual(['orphans/get.yaml:3:11 /provider unknown provider "orphans" (declared: demo)']);
  });

  it("takes a tool's provider from its folder", async () => {
    expect(await fixtureProblems('tool-in-other-folder')).toEqual([
      'other/get.yaml:3:11 /provider the tool is in the folder "other", so its provider is "other", not "demo"',
    ]);
  });

  it("reports a tool's own problems when its provider.yaml does not compile", async () => {
    expect(await fixtureProblems('broken-provider')).toEqual([
      'demo/provider.yaml:14:10 /base_url/field "site" is not an account field',
      'demo/get.yaml:17:11 /request/path unknown variable "args.nope" (declared arguments: id)',
      'demo/get.yaml:19:13 /request/query/who unknown variable "account.nobody" (account fields: base_url, token)',
    ]);
  });

  it("reports a tool's own problems when its provider.yaml does not match the schema", async () => {
    expect(await fixtureProblems('unshaped-provider')).toEqual([
      'demo/provider.yaml:2:1 / missing required property "account"',
      'demo/get.yaml:17:11 /request/path unknown variable "args.nope" (declared arguments: id)',
    ]);
  });

  it('checks $schema lines: the schema of the right kind, at a path that exists', async () => {
    expect(await fixtureProblems('schema-line')).toEqual([
      'demo/get.yaml:1:33 / the $schema line leads to ../schemas/tool.schema.json, which does not exist relative to this file; the schema is at ../../../../../runtime/toolspec/schemas/tool.schema.json',
      'demo/provider.yaml:1:33 / the $schema line names "tool.schema.json", but a provider spec is written in provider.schema.json',
    ]);
  });
});

describe('what cannot work, found at load', () => {
  it("reports a file's schema problems and its other problems together", async () => {
    const text = TOOL('', 'request:\n  method: GET\n  path: /items/{{args.idd}}\n').replace('credits: 1', 'credits: two');
    expect(await problems({ 'get.yaml': text })).toEqual([
      'demo/get.yaml:5:10 /credits must be integer',
      'demo/get.yaml:17:11 /request/path unknown variable "args.idd" (declared arguments: id)',
    ]);
  });

  it('reports a required output property that no mapping produces (also inside a list mapped item by item)', async () => {
    const text = TOOL().replace(
      'output:\n  type: object\n',
      'output:\n  type: object\n  required: [id, title]\n  properties:\n    id: { type: string }\n    title: { type: string }\n    items: { type: array, items: { type: object, required: [name], properties: { name: { type: string } } } }\n',
    );
    const map =
      'response:\n  map:\n    id: "{{response.body.id}}"\n    items:\n      $each: "{{response.body.list}}"\n      $map: { label: "{{item.label}}" }\n';
    expect(await problems({ 'get.yaml': text + map })).toEqual([
      'demo/get.yaml:25:5 /response/map the output requires "title", which this mapping does not produce: every call would fail',
      'demo/get.yaml:28:13 /response/map/items/$map the output requires "name", which this mapping does not produce: every call would fail',
    ]);
    // A result made by one expression, or by a response plugin, may have anything: it is checked at run time.
    expect(await problems({ 'get.yaml': text + 'response:\n  map: "{{response.body}}"\n' })).toEqual([]);
  });

  it('reports a required output that the default result of a paginated request lacks', async () => {
    const text = TOOL('', 'request:\n  method: GET\n  path: /items\n  paginate: { style: page, param: { query: page } }\n').replace(
      'output:\n  type: object\n',
      'output:\n  type: object\n  required: [items, total]\n  properties: { items: { type: array }, total: { type: integer } }\n',
    );
    expect(await problems({ 'get.yaml': text })).toEqual([
      'demo/get.yaml:15:13 /output/required the output requires "total", which the default result of a paginated request ({items, has_more, next_cursor}) does not have: every call would fail',
    ]);
  });

  it('reports descriptions over the limit the clients cut at, in the tool and in its input', async () => {
    const long = 'x'.repeat(2049);
    const text = TOOL()
      .replace('description: Gets an item.', `description: ${long}`)
      .replace('id: { type: string }', `id: { type: string, description: ${long} }`);
    expect(await problems({ 'get.yaml': text })).toEqual([
      'demo/get.yaml:4:14 /description the description has 2,049 characters, over the limit of 2,048 (Claude Code cuts longer ones without a word): shorten it',
      'demo/get.yaml:12:38 /input/properties/id/description the description has 2,049 characters, over the limit of 2,048 (Claude Code cuts longer ones without a word): shorten it',
    ]);
  });

  it('reads version 1 and names a version it does not read', async () => {
    expect(await problems({ 'get.yaml': 'version: 1\n' + TOOL() })).toEqual([]);
    expect(await problems({ 'get.yaml': 'version: 2\n' + TOOL() })).toEqual([
      'demo/get.yaml:1:10 /version version 2 is not a version of the spec language this service reads (1)',
    ]);
  });

  it('reports pagination that cannot work', async () => {
    const text = TOOL(
      '',
      [
        'steps:',
        '  - name: a',
        '    request:',
        '      method: GET',
        '      path: /a',
        '      paginate: { style: cursor, param: { body: cursor } }',
        '  - name: b',
        '    request:',
        '      method: POST',
        '      path: /b',
        '      call: { use: jira.search_jql }',
        '      paginate: { style: link, param: { query: page }, total: /total, max_pages: 0 }',
        '  - name: c',
        '    request:',
        '      method: POST',
        '      path: /c',
        '      paginate: { style: page, param: { query: page }, total: /total, max_pages: many }',
        '',
      ].join('\n'),
    );
    expect(await problems({ 'get.yaml': text })).toEqual([
      'demo/get.yaml:20:17 /steps/0/request/paginate the cursor style needs "cursor": the JSON pointer to the next cursor in the body',
      'demo/get.yaml:20:49 /steps/0/request/paginate/param/body a GET request has no body: select the page in the query',
      'demo/get.yaml:26:17 /steps/1/request/paginate paginate and a call plugin cannot go together: the call plugin carries out the request itself',
      'demo/get.yaml:26:56 /steps/1/request/paginate/total "total" means nothing to the link style',
      'demo/get.yaml:26:82 /steps/1/request/paginate/max_pages max_pages must be a whole number of at least 1',
      'demo/get.yaml:31:63 /steps/2/request/paginate/total the page style reads total only with page_size',
      'demo/get.yaml:31:82 /steps/2/request/paginate/max_pages max_pages is a number or a template such as "{{args.max_pages}}"',
    ]);
  });

  it('reports lists mapped item by item that cannot work, and `item` outside them', async () => {
    const map = [
      'response:',
      '  map:',
      '    a: { $each: "{{response.body.list}}", $map: "{{item.name}}", extra: 1 }',
      '    b: { $each: "list: {{response.body.list}}" }',
      '    c: { $filter: "{{item.ok}}" }',
      '    d: "{{item.name}}"',
      '',
    ].join('\n');
    expect(await problems({ 'get.yaml': TOOL(map) })).toEqual([
      'demo/get.yaml:20:73 /response/map/a/extra a list mapped item by item has only $each, $filter, $map, not "extra"',
      'demo/get.yaml:21:18 /response/map/b/$each $each must be exactly one expression giving a list, e.g. "{{response.body.results}}"',
      'demo/get.yaml:22:8 /response/map/c $each is missing: a template giving the list, e.g. "{{response.items}}"',
      'demo/get.yaml:23:11 /response/map/d "item.name" is only defined inside $filter and $map of a list mapped item by item ($each)',
    ]);
  });

  it('lets error rules read the answer, and provider headers read non-secret account fields', async () => {
    const rules =
      'errors:\n  - status: 400\n    when: "{{eq response.body.error.param \'id\'}}"\n    code: "{{response.body.error.type}}"\n    message: "{{response.body.error.message}} ({{args.id}})"\n    detail: /error/detail\n    hint: "Retry after {{response.headers.retry-after}} s"\n    headers: { X-Reason: [a, b], retry-after: true }\n';
    expect(await problems({ 'get.yaml': TOOL(rules) })).toEqual([]);
    const provider = PROVIDER + 'headers:\n  X-Token: "{{account.token}}"\n  X-Base: "{{account.base}}"\n  X-Nope: "{{args.id}}"\n';
    expect(await problems({ 'provider.yaml': provider })).toEqual([
      'demo/provider.yaml:18:15 /headers/X-Token "account.token" is a secret: secrets belong under auth.headers',
      'demo/provider.yaml:20:14 /headers/X-Nope only account.<field> can be used here, not "args"',
    ]);
  });

  it('checks exchanges files: beside a tool, account fields that exist and fit, names once, a result or an error', async () => {
    const exchanges = [
      'account: { colour: red, base: "not a url" }',
      'exchanges:',
      '  - name: one',
      '    arguments: {}',
      '    requests: []',
      '    result: {}',
      '    error: { code: x }',
      '  - name: one',
      '    arguments: {}',
      '    requests: [{ method: GET, path: /x, answer: {} }]',
      '',
    ].join('\n');
    expect(await problems({ 'get.yaml': TOOL(), 'get.exchanges.yaml': exchanges, 'gone.exchanges.yaml': 'exchanges: []\n' })).toEqual([
      'demo/get.exchanges.yaml:1:12 /account/colour "colour" is not a field of a demo account (fields: base, token)',
      'demo/get.exchanges.yaml:1:32 /account/base "base" (Base URL) must be a URL such as https://example.com',
      'demo/get.exchanges.yaml:3:5 /exchanges/0 an exchange expects a result or an error, not both',
      'demo/get.exchanges.yaml:8:11 /exchanges/1/name the exchange "one" is named twice in this file',
      'demo/gone.exchanges.yaml:1:12 /exchanges must NOT have fewer than 1 items',
      'demo/gone.exchanges.yaml:1:1 / exchanges belong beside their tool: there is no gone.yaml in this folder',
    ]);
    // A field whose placeholder does not fit its pattern must be given.
    const strict = PROVIDER.replace('      secret: true\n', '      secret: true\n      pattern: "^tok_"\n');
    expect(
      await problems({ 'provider.yaml': strict, 'get.yaml': TOOL(), 'get.exchanges.yaml': 'exchanges: [{ name: a, arguments: {}, requests: [] }]\n' }),
    ).toEqual([
      'demo/get.exchanges.yaml:1:1 / give account.token a value for the exchanges: the placeholder "example-token" does not do ("token" (Token) must match ^tok_)',
    ]);
  });
});
