// Templates: JSON types kept, optional values dropped, strict variables, no prototype access, path
// segments encoded, and secrets never echoed in error texts (through the running service).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RenderError, TemplateError, compileTemplate } from '../runtime/template/template.ts';
import { compileTree, renderTree } from '../runtime/template/tree.ts';
import { type JiraSandbox, startJiraSandbox } from '../sandboxes/jira/jira-sandbox.ts';
import { connectV1 } from './support/mcp-clients.ts';
import { type TestService, createOwner, createServer, startTestService } from './support/service.ts';

const anyVariable = () => null;

describe('template compilation and rendering', () => {
  it('keeps the JSON type of a leaf that is one expression', () => {
    const tree = compileTree({ n: '{{args.n}}', list: '{{args.list}}', flag: '{{args.flag}}', obj: '{{args.obj}}', text: 'n={{args.n}}' }, anyVariable);
    expect(renderTree(tree, { args: { n: 3, list: [1, 'a'], flag: false, obj: { a: 1 } } })).toEqual({
      n: 3,
      list: [1, 'a'],
      flag: false,
      obj: { a: 1 },
      text: 'n=3',
    });
  });

  it('drops keys whose single expression is undefined, and refuses a missing value inside text', () => {
    const tree = compileTree({ a: '{{args.a}}', b: 'x' }, anyVariable);
    expect(renderTree(tree, { args: {} })).toEqual({ b: 'x' });
    expect(() => compileTemplate('id-{{args.a}}', anyVariable).render({ args: {} })).toThrow(RenderError);
  });

  it('runs the allow-listed helpers, nested', () => {
    const t = compileTemplate("{{join (split (lower args.tags) ',') '|'}}", anyVariable);
    expect(t.render({ args: { tags: 'A, B,,C' } })).toBe('a|b|c');
    expect(compileTemplate("{{default args.fields '*all'}}", anyVariable).render({ args: {} })).toBe('*all');
    expect(compileTemplate("{{pick args.flag 'true' 'false'}}", anyVariable).render({ args: { flag: true } })).toBe('true');
  });

  it('never reads through the prototype chain', () => {
    expect(() => compileTemplate('{{args.__proto__}}', anyVariable)).toThrow('access to "__proto__" is not allowed');
    expect(() => compileTemplate('{{args.x.constructor.name}}', anyVariable)).toThrow('access to "constructor" is not allowed');
    // Inherited properties are invisible even when not named in the source.
    expect(compileTemplate('{{args.toString}}', anyVariable).render({ args: {} })).toBeUndefined();
  });

  it('refuses this, parent paths, @data, hashes and partials', () => {
    for (const source of ['{{this}}', '{{../args}}', '{{@root.args}}', "{{join args.x sep=','}}", '{{> partial}}']) {
      expect(() => compileTemplate(source, anyVariable), source).toThrow(TemplateError);
    }
  });

  it('reports undeclared variables through the check', () => {
    const check = ([root, name]: string[]) => (root === 'args' && name === 'known' ? null : `unknown variable "${root}.${name}"`);
    expect(() => compileTemplate('{{args.unknown}}', check)).toThrow('unknown variable "args.unknown"');
    expect(compileTemplate('{{args.known}}', check).variables).toEqual([['args', 'known']]);
  });

  it('encodes expression output inside a path segment, not the literal text', () => {
    const t = compileTemplate('issue-{{args.key}}', anyVariable);
    expect(t.render({ args: { key: 'a/b c' } }, encodeURIComponent)).toBe('issue-a%2Fb%20c');
  });
});

describe('path parameters and secrets through the service', () => {
  let jira: JiraSandbox;
  let svc: TestService;
  let call: (args: Record<string, unknown>) => Promise<{ isError?: boolean; text: string }>;

  beforeAll(async () => {
    jira = await startJiraSandbox();
    svc = await startTestService();
    const owner = await createOwner(svc, 100);
    const { serverId, key } = await createServer(svc, owner, {
      accounts: { jira: { kind: 'tracker', name: 'Jira', site_url: jira.url, email: jira.credentials.email, api_token: jira.credentials.apiToken } },
      tools: [{ base_tool: 'tracker_get_issue', account: 'jira' }],
    });
    const client = await connectV1(svc.url, serverId, key);
    call = async (args) => {
      const r = await client.callTool({ name: 'tracker_get_issue', arguments: args });
      return { isError: r.isError as boolean, text: (r.content as Array<{ text: string }>)[0].text };
    };
  });

  afterAll(async () => {
    await svc?.close();
    await jira?.close();
  });

  const lastPath = () => jira.requests.at(-1)!.path;

  it('encodes ../ and %2F so a caller cannot leave the intended path', async () => {
    await call({ issue_key: '../../myself' });
    expect(lastPath()).toBe('/rest/api/3/issue/..%2F..%2Fmyself');
    await call({ issue_key: 'DEMO%2F1' });
    expect(lastPath()).toBe('/rest/api/3/issue/DEMO%252F1');
  });

  it('refuses "." and ".." as a whole path value before any request', async () => {
    const seen = jira.requests.length;
    for (const value of ['..', '.']) {
      const r = await call({ issue_key: value });
      expect(r.isError).toBe(true);
      expect(r.text).toBe(`"${value}" is not allowed as a path value`);
    }
    expect(jira.requests.length).toBe(seen);
  });

  it('never echoes the account secret, even when the provider does', async () => {
    const basic = Buffer.from(`${jira.credentials.email}:${jira.credentials.apiToken}`).toString('base64');
    jira.faults.push({
      pathPrefix: '/rest/api/3/issue/',
      status: 400,
      body: { errorMessages: [`token ${jira.credentials.apiToken} and header Basic ${basic} rejected`], errors: {} },
    });
    const r = await call({ issue_key: 'DEMO-1' });
    expect(r.isError).toBe(true);
    expect(r.text).toContain('token [redacted] and header Basic [redacted] rejected');
    expect(r.text).not.toContain(jira.credentials.apiToken);
    await svc.flush();
    expect(svc.logs.join('\n')).not.toContain(jira.credentials.apiToken);
  });
});
