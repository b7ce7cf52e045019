// Workspace tools (Notion 2025-09-03) end to end: the official MCP client -> our service -> the Notion sandbox.
import { randomUUID } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { markdownToBlocks } from '../plugins/notion/markdown.ts';
import { connectV1 } from './support/mcp-clients.ts';
import { toolCalls } from './support/tool-calls.ts';
import { createOwner, createServer, type Owner, startTestService, type TestService } from './support/service.ts';
import { rateLimitFault, startNotionSandbox, type NotionSandbox } from '../sandboxes/notion/notion-sandbox.ts';

const TOOLS = [
  'search_pages',
  'get_page',
  'get_page_content',
  'create_page',
  'get_database',
  'retrieve_data_source',
  'query_data_source',
  'create_database',
  'update_database',
  'create_data_source',
  'update_data_source',
  'list_data_source_templates',
];

const fixtureDir = new URL('./fixtures/markdown/', import.meta.url);
const fixtures = readdirSync(fixtureDir)
  .filter((f) => f.endsWith('.md'))
  .map((name) => ({ name, markdown: readFileSync(new URL(name, fixtureDir), 'utf8').trimEnd() }));

type Block = { type: string; children?: Block[]; [k: string]: any };

let sim: NotionSandbox;
let svc: TestService;
let owner: Owner;
let client: Awaited<ReturnType<typeof connectV1>>;

beforeAll(async () => {
  sim = await startNotionSandbox({ templateDelayMs: 40 });
  svc = await startTestService();
  owner = await createOwner(svc, 1000);
  const { serverId, key } = await createServer(svc, owner, {
    accounts: {
      main: { kind: 'workspace', name: 'Notion', integration_token: sim.token, api_url: sim.url },
      revoked: { kind: 'workspace', name: 'Old Notion', integration_token: 'ntn_revoked0000000000000000', api_url: sim.url },
    },
    tools: [
      ...TOOLS.map((base_tool) => ({ base_tool, account: 'main' })),
      { base_tool: 'search_pages', name: 'search_with_revoked_token', account: 'revoked' },
    ],
  });
  client = await connectV1(svc.url, serverId, key);
});

afterAll(async () => {
  await client?.close();
  await svc?.close();
  await sim?.close();
});

const { ok, fails } = toolCalls(() => client);

const balance = async () => (await svc.call('GET', '/api/credits', { token: owner.token })).body.balance as number;
const requestsSince = (n: number) => sim.requests.slice(n);
const bodyOf = (r: { body: string }) => JSON.parse(r.body);
const notionBody = (b: Block) => b[b.type] as { children?: Block[]; rich_text?: unknown[] };
/** Deepest nesting of blocks in a request body (1 = no children). */
const depth = (blocks: Block[]): number => Math.max(0, ...blocks.map((b) => 1 + depth(notionBody(b).children ?? [])));
const countTree = (blocks: Block[]): number => blocks.reduce((n, b) => n + 1 + countTree(b.children ?? []), 0);
const text = (items: Array<{ plain_text: string }>) => items.map((t) => t.plain_text).join('');

describe('account', () => {
  it('fills in the API URL and checks the token form', async () => {
    const created = await svc.call('POST', '/api/accounts', {
      token: owner.token,
      body: { kind: 'workspace', name: 'Defaulted', integration_token: 'secret_abcdef' },
    });
    expect(created.status).toBe(201);
    expect(created.body.api_url).toBe('https://api.notion.com');
    const bad = await svc.call('POST', '/api/accounts', { token: owner.token, body: { kind: 'workspace', name: 'Bad', integration_token: 'abc123' } });
    expect(bad.status).toBe(400);
    expect(bad.body.message).toMatch(/integration_token.*starts with ntn_ \(or secret_/);
  });

  it('verifies the token with GET /v1/users/me, sending Bearer auth and Notion-Version', async () => {
    const { body: list } = await svc.call('GET', '/api/accounts', { token: owner.token });
    const main = list.accounts.find((a: any) => a.name === 'Notion');
    const before = sim.requests.length;
    const res = await svc.call('POST', `/api/accounts/${main.id}/verify`, { token: owner.token });
    expect(res.body).toMatchObject({ id: main.id, verified: true });
    const [req] = requestsSince(before);
    expect([req.method, req.path, req.headers.authorization, req.headers['notion-version']]).toEqual([
      'GET',
      '/v1/users/me',
      `Bearer ${sim.token}`,
      '2025-09-03',
    ]);
  });

  it('lists the twelve tools at 1 credit each', async () => {
    const { tools } = await client.listTools();
    for (const name of TOOLS) expect(tools.find((t) => t.name === name)?._meta?.['io.toolserver/credits']).toBe(1);
  });
});

describe('search_pages', () => {
  it('finds pages by title and pages through them', async () => {
    const first = await ok('search_pages', { query: 'meeting notes', page_size: 5 });
    expect(first.results).toHaveLength(5);
    expect(first.has_more).toBe(true);
    const rest = await ok('search_pages', { query: 'meeting notes', page_size: 100, start_cursor: first.next_cursor });
    const all = [...first.results, ...rest.results];
    expect(all).toHaveLength(13);
    expect(new Set(all.map((r) => r.id)).size).toBe(13);
    expect(rest).toMatchObject({ has_more: false, next_cursor: null });
    const item = all.find((r) => r.id === sim.ids.meetingNotesPage);
    expect(Object.keys(item).sort()).toEqual(['created_time', 'id', 'last_edited_time', 'title', 'type', 'url']);
    expect(item).toMatchObject({ title: 'Meeting notes', type: 'page' });
    expect(item.url).toMatch(/^https:\/\/www\.notion\.so\//);
  });

  it('takes titles from the title property of rows and from data sources, and filters by object type', async () => {
    const rows = await ok('search_pages', { query: 'Write API' });
    expect(rows.results.map((r: any) => [r.id, r.title, r.type])).toEqual([[sim.ids.taskRows[0], 'Write API docs', 'page']]);
    const before = sim.requests.length;
    const sources = await ok('search_pages', { object_filter: 'data_source', page_size: 100 });
    expect(bodyOf(requestsSince(before)[0])).toEqual({ query: '', page_size: 100, filter: { property: 'object', value: 'data_source' } });
    expect(sources.results.map((r: any) => r.title).sort()).toEqual(['Milestones', 'Tasks']);
    expect(sources.results.every((r: any) => r.type === 'data_source')).toBe(true);
  });

  it('does not see pages that are not shared', async () => {
    expect((await ok('search_pages', { query: 'Private notes' })).results).toEqual([]);
  });
});

describe('reading pages', () => {
  it('get_page returns a row with its properties', async () => {
    const page = await ok('get_page', { page_id: sim.ids.taskRows[1].replace(/-/g, '') });
    expect(page).toMatchObject({ id: sim.ids.taskRows[1], object: 'page', in_trash: false });
    expect(page.properties.Name.title[0].plain_text).toBe('Fix login bug');
    expect(page.properties.Priority.select.name).toBe('High');
    expect(page.properties.Done.checkbox).toBe(true);
  });

  it('get_page_content follows nested blocks and renders markdown', async () => {
    const content = await ok('get_page_content', { page_id: sim.ids.welcomePage });
    expect(content.page_id).toBe(sim.ids.welcomePage);
    const list = content.blocks.find((b: Block) => b.id === sim.ids.nestedListItem);
    expect(list.children.map((c: Block) => text(c.bulleted_list_item.rich_text))).toEqual(['Nested item A', 'Nested item B']);
    expect(text(list.children[1].children[0].bulleted_list_item.rich_text)).toBe('Deeper item');
    expect(content.block_count).toBe(countTree(content.blocks));
    expect(content.block_count).toBeGreaterThan(content.blocks.length);
    expect(content.markdown).toContain(
      '# Welcome to the workspace\n\nThis workspace is **simulated** for tests. See the [API docs](https://developers.notion.com).',
    );
    expect(content.markdown).toContain('- First item\n  - Nested item A\n  - Nested item B\n    - Deeper item\n- Second item');
    expect(content.markdown).toContain('```typescript\nconst answer: number = 42;');
    // Child pages are links: their content is not read.
    expect(content.markdown).toContain('[Getting Started Guide](https://www.notion.so/');
    expect(content.markdown).not.toContain('Read this first.');
  });
});

describe('create_page', () => {
  it('creates a page under a page from long, nested markdown in batches Notion accepts', async () => {
    const long = 'Lorem ipsum dolor sit amet. '.repeat(180).trim(); // > 2,000 characters
    const deep = '- level 1\n  - level 2\n    - level 3\n      - level 4\n        - level 5';
    const paragraphs = Array.from({ length: 230 }, (_, i) => `Paragraph ${i + 1} with *emphasis*.`);
    const manyChildren = ['- parent of many', ...Array.from({ length: 120 }, (_, i) => `  - child ${i + 1}`)].join('\n');
    const markdown = ['# Long document', long, deep, ...paragraphs.slice(0, 120), manyChildren, ...paragraphs.slice(120), '## The end'].join('\n\n');
    const countRequestTree = (blocks: Block[]): number => blocks.reduce((n, b) => n + 1 + countRequestTree(notionBody(b).children ?? []), 0);
    const expectedCount = countRequestTree(markdownToBlocks(markdown) as Block[]);

    const before = sim.requests.length;
    const created = await ok('create_page', { title: 'Long document', parent_page_id: sim.ids.welcomePage, content: markdown });
    expect(created.id).toMatch(/^[0-9a-f-]{36}$/);
    expect(created.url).toContain(created.id.replace(/-/g, ''));

    const writes = requestsSince(before).filter((r) => r.method !== 'GET');
    const create = bodyOf(writes[0]);
    expect(writes[0].path).toBe('/v1/pages');
    expect(create.parent).toEqual({ type: 'page_id', page_id: sim.ids.welcomePage });
    expect(create.properties).toEqual({ title: { title: [{ text: { content: 'Long document' } }] } });
    expect(create.template).toBeUndefined();
    for (const w of writes) {
      const children: Block[] = bodyOf(w).children;
      expect(children.length).toBeLessThanOrEqual(100);
      expect(depth(children)).toBeLessThanOrEqual(2);
      for (const b of children) expect((notionBody(b).children ?? []).length).toBeLessThanOrEqual(100);
    }
    expect(writes.slice(1).every((w) => w.method === 'PATCH' && w.path.endsWith('/children'))).toBe(true);
    expect(writes.length).toBeGreaterThanOrEqual(4);

    const content = await ok('get_page_content', { page_id: created.id });
    expect(content.block_count).toBe(expectedCount);
    expect(content.markdown).toBe(markdown);
  }, 30_000);

  it("splits text of more than 100 rich-text items (Notion's limit per array) into following blocks, losing no word", async () => {
    // 150 words alternating plain and bold make about 300 rich-text items in one paragraph and one list item.
    const words = Array.from({ length: 150 }, (_, i) => (i % 2 ? `**w${i}**` : `w${i}`)).join(' ');
    const longCode = Array.from({ length: 120 }, (_, i) => `line ${i} ${'x'.repeat(1990)}`).join('\n'); // > 200,000 characters
    const markdown = `${words}\n\n- ${words}\n\n\`\`\`\n${longCode}\n\`\`\``;
    const before = sim.requests.length;
    const created = await ok('create_page', { title: 'Many runs', parent_page_id: sim.ids.welcomePage, content: markdown });
    for (const w of requestsSince(before).filter((r) => r.method !== 'GET')) {
      const check = (blocks: Block[]) =>
        blocks.forEach((b) => {
          expect((notionBody(b).rich_text ?? []).length).toBeLessThanOrEqual(100);
          check(notionBody(b).children ?? []);
        });
      check(bodyOf(w).children ?? []);
    }
    const content = await ok('get_page_content', { page_id: created.id });
    for (let i = 0; i < 150; i++) expect(content.markdown).toContain(i % 2 ? `**w${i}**` : `w${i}`);
    expect(content.markdown.match(/line \d+ x+/g)).toHaveLength(120);
  });

  it('keeps the words of links Notion would refuse (relative, #anchor, mailto:, javascript:, data:) as plain text', async () => {
    const markdown =
      'See [the docs](https://example.com/docs), [setup](./setup.md), [top](#top), [mail](mailto:a@example.com), [x](javascript:alert(1)) and [pixel](data:text/plain,hi).';
    const created = await ok('create_page', { title: 'Links', parent_page_id: sim.ids.welcomePage, content: markdown });
    const content = await ok('get_page_content', { page_id: created.id });
    expect(content.markdown).toBe('See [the docs](https://example.com/docs), setup, top, mail, x and pixel.');
  });

  it('says which part was written when appending content fails after the page exists', async () => {
    const markdown = Array.from({ length: 150 }, (_, i) => `Line ${i + 1}`).join('\n\n');
    sim.faults.push({
      method: 'PATCH',
      pathPrefix: '/v1/blocks/',
      status: 503,
      body: { object: 'error', status: 503, code: 'service_unavailable', message: 'Notion is unavailable.' },
    });
    const credits = await balance();
    const e = await fails('create_page', { title: 'Half written', parent_page_id: sim.ids.welcomePage, content: markdown });
    expect(e).toMatchObject({ code: 'partially_applied', provider_status: 503, retryable: false });
    expect(e.message).toMatch(
      /^The page was created \(id [0-9a-f-]{36}, https:\/\/www\.notion\.so\/\S+\) but only 100 of 150 content blocks were written: Notion answered 503: Notion is unavailable\.$/,
    );
    // The page exists, so the call is charged.
    expect(await balance()).toBe(credits - 1);
  });

  it('creates a data source row with every property type, the title in the title property', async () => {
    const { ada, grace } = sim.ids.users;
    const before = sim.requests.length;
    const created = await ok('create_page', {
      title: 'Ship the release',
      parent_data_source_id: sim.ids.tasksDataSource,
      properties: {
        Notes: [{ text: { content: 'Release notes ' } }, { text: { content: 'attached' } }],
        Estimate: 13,
        Priority: { name: 'High' },
        Tags: [{ name: 'backend' }, { name: 'docs' }],
        Due: { start: '2025-12-01' },
        Done: false,
        Status: { status: { name: 'In progress' } },
        Assignee: [{ id: ada }, { id: grace }],
        Link: 'https://example.com/release',
        Contact: { email: 'release@example.com' },
      },
      content: 'Checklist:\n\n- [ ] tag\n- [ ] publish',
    });
    const create = requestsSince(before).find((r) => r.method === 'POST' && r.path === '/v1/pages')!;
    const sent = bodyOf(create);
    expect(sent.parent).toEqual({ type: 'data_source_id', data_source_id: sim.ids.tasksDataSource });
    expect(sent.properties).toMatchObject({
      Name: { title: [{ text: { content: 'Ship the release' } }] },
      Priority: { select: { name: 'High' } },
      Due: { date: { start: '2025-12-01' } },
      Done: { checkbox: false },
      Estimate: { number: 13 },
      Link: { url: 'https://example.com/release' },
    });

    const page = await ok('get_page', { page_id: created.id });
    const p = page.properties;
    expect(text(p.Name.title)).toBe('Ship the release');
    expect(text(p.Notes.rich_text)).toBe('Release notes attached');
    expect(p.Estimate.number).toBe(13);
    expect(p.Priority.select.name).toBe('High');
    expect(p.Tags.multi_select.map((o: any) => o.name)).toEqual(['backend', 'docs']);
    expect(p.Due.date.start).toBe('2025-12-01');
    expect(p.Done.checkbox).toBe(false);
    expect(p.Status.status.name).toBe('In progress');
    expect(p.Assignee.people.map((u: any) => u.id)).toEqual([ada, grace]);
    expect(p.Link.url).toBe('https://example.com/release');
    expect(p.Contact.email).toBe('release@example.com');
    expect((await ok('get_page_content', { page_id: created.id })).markdown).toBe('Checklist:\n\n- [ ] tag\n- [ ] publish');
  });

  it('get_page reads every relation and people reference, past the 25 a Notion page object holds', async () => {
    const people = Array.from({ length: 30 }, () => ({ id: randomUUID() }));
    const created = await ok('create_page', { title: 'Big team', parent_data_source_id: sim.ids.tasksDataSource });
    // 30 people and a relation of 40 pages, set on the sandbox's records (more people than the seed has users;
    // the tools do not write relations).
    const ds = sim.dataSource(sim.ids.tasksDataSource)!;
    sim.page(created.id)!.properties[ds.schema.find((p) => p.name === 'Assignee')!.id] = people.map((p) => p.id);
    ds.schema.push({ id: '%5Brel', name: 'Blocked by', type: 'relation', description: null, relation: { dataSourceId: ds.id, databaseId: ds.databaseId } });
    const related = Array.from({ length: 40 }, () => randomUUID());
    sim.page(created.id)!.properties['%5Brel'] = related;
    // What Notion itself answers: 25 of each (the relation says has_more).
    const raw = sim.pageJson(created.id) as { properties: Record<string, any> };
    expect(raw.properties.Assignee.people).toHaveLength(25);
    expect(raw.properties['Blocked by']).toMatchObject({ has_more: true });
    expect(raw.properties['Blocked by'].relation).toHaveLength(25);

    const before = sim.requests.length;
    const credits = await balance();
    const page = await ok('get_page', { page_id: created.id });
    expect(page.properties.Assignee.people.map((u: { id: string }) => u.id)).toEqual(people.map((p) => p.id));
    expect(page.properties['Blocked by']).toMatchObject({ has_more: false, relation: related.map((id) => ({ id })) });
    // The property endpoint was asked with the id as shown ("%5Brel" is "[rel" encoded once).
    const reads = requestsSince(before).filter((r) => r.path.includes('/properties/'));
    expect(reads.map((r) => r.path)).toEqual([`/v1/pages/${created.id}/properties/${raw.properties.Assignee.id}`, `/v1/pages/${created.id}/properties/%5Brel`]);
    expect(await balance()).toBe(credits - 1);
    ds.schema.pop();
  });

  it('creates rows from the default template and from a template id; content and a template do not mix', async () => {
    const before = sim.requests.length;
    const fromDefault = await ok('create_page', { title: 'Crash on start', parent_data_source_id: sim.ids.tasksDataSource, template_type: 'default' });
    expect(bodyOf(requestsSince(before).find((r) => r.path === '/v1/pages')!).template).toEqual({ type: 'default' });
    const fromId = await ok('create_page', {
      title: 'Dark mode',
      parent_data_source_id: sim.ids.tasksDataSource,
      template_type: 'template_id',
      template_id: sim.ids.featureTemplate,
    });
    // Notion applies templates asynchronously: the content arrives shortly after the answer.
    await expect.poll(async () => (await ok('get_page_content', { page_id: fromDefault.id })).markdown, { timeout: 10_000 }).toContain('## Steps to reproduce');
    await expect
      .poll(async () => (await ok('get_page_content', { page_id: fromId.id })).markdown, { timeout: 10_000 })
      .toBe('## Problem\n\nWho needs this and why?');
    expect(text((await ok('get_page', { page_id: fromId.id })).properties.Name.title)).toBe('Dark mode');

    const credits = await balance();
    const sentBefore = sim.requests.length;
    const mixed = await fails('create_page', { title: 'x', parent_data_source_id: sim.ids.tasksDataSource, template_type: 'default', content: 'text' });
    expect(mixed.code).toBe('invalid_arguments');
    expect(mixed.message).toMatch(/either "content" or a template/);
    const noId = await fails('create_page', { title: 'x', parent_data_source_id: sim.ids.tasksDataSource, template_type: 'template_id' });
    expect(noId.message).toContain('"template_id" is required');
    const noParent = await fails('create_page', { title: 'x' });
    expect(noParent.message).toContain('Give one of "parent_page_id", "parent_data_source_id"');
    expect(sim.requests.length).toBe(sentBefore);
    expect(await balance()).toBe(credits);
  });
});

describe('databases and data sources', () => {
  it('creates, updates, trashes and restores a database and its data sources, with schema changes', async () => {
    const db = await ok('create_database', {
      parent_page_id: sim.ids.welcomePage,
      title: 'Reading list',
      description: 'Books to read',
      icon: { emoji: '📚' },
      initial_data_source_properties: { Title: { title: {} }, Author: { rich_text: {} }, Genre: { select: { options: [{ name: 'Fiction', color: 'blue' }] } } },
    });
    expect(db.object).toBe('database');
    expect(db.data_sources).toHaveLength(1);
    const books = db.data_sources[0].id;

    const second = await ok('create_data_source', { database_id: db.id, title: 'Articles', properties: { Headline: { title: {} }, Read: { checkbox: {} } } });
    expect(second.object).toBe('data_source');
    const fetched = await ok('get_database', { database_id: db.id });
    expect(text(fetched.title)).toBe('Reading list');
    expect(fetched.data_sources.map((s: any) => s.name).sort()).toEqual(['Articles', 'Reading list']);

    const renamed = await ok('update_database', { database_id: db.id, title: 'Library', description: 'All the books' });
    expect(text(renamed.title)).toBe('Library');
    expect((await ok('update_database', { database_id: db.id, in_trash: true })).in_trash).toBe(true);
    expect((await ok('get_database', { database_id: db.id })).in_trash).toBe(true);
    expect((await ok('update_database', { database_id: db.id, in_trash: false })).in_trash).toBe(false);

    const before = sim.requests.length;
    const changed = await ok('update_data_source', {
      data_source_id: books,
      title: 'Books',
      properties: { Genre: null, Author: { name: 'Writer' }, Pages: { number: { format: 'number' } } },
    });
    expect(bodyOf(requestsSince(before)[0]).properties).toEqual({ Genre: null, Author: { name: 'Writer' }, Pages: { number: { format: 'number' } } });
    expect(Object.keys(changed.properties).sort()).toEqual(['Pages', 'Title', 'Writer']);
    const schema = await ok('retrieve_data_source', { data_source_id: books });
    expect(schema.properties.Writer.type).toBe('rich_text');
    expect(schema.properties.Pages).toMatchObject({ type: 'number', number: { format: 'number' } });
    expect(schema.properties.Genre).toBeUndefined();

    expect((await ok('update_data_source', { data_source_id: second.id, in_trash: true })).in_trash).toBe(true);
    expect((await ok('update_data_source', { data_source_id: second.id, in_trash: false })).in_trash).toBe(false);

    const row = await ok('create_page', { title: 'Dune', parent_data_source_id: books, properties: { Writer: 'Frank Herbert', Pages: 412 } });
    const props = (await ok('get_page', { page_id: row.id })).properties;
    expect([text(props.Title.title), text(props.Writer.rich_text), props.Pages.number]).toEqual(['Dune', 'Frank Herbert', 412]);
  });

  it('moves a database under another page', async () => {
    const db = await ok('create_database', { parent_page_id: sim.ids.welcomePage, title: 'Movable' });
    expect(db.data_sources).toHaveLength(1);
    const moved = await ok('update_database', { database_id: db.id, parent_page_id: sim.ids.meetingNotesPage });
    expect(moved.parent).toEqual({ type: 'page_id', page_id: sim.ids.meetingNotesPage });
  });

  it('retrieve_data_source returns the schema with select and status options', async () => {
    const ds = await ok('retrieve_data_source', { data_source_id: sim.ids.tasksDataSource });
    expect(Object.keys(ds.properties)).toEqual(
      expect.arrayContaining(['Name', 'Notes', 'Estimate', 'Priority', 'Tags', 'Due', 'Done', 'Status', 'Assignee', 'Link', 'Contact']),
    );
    expect(ds.properties.Priority.select.options.map((o: any) => [o.name, o.color])).toContainEqual(['High', 'red']);
    expect(ds.properties.Status.status.options.map((o: any) => o.name)).toContain('Done');
  });
});

describe('query_data_source', () => {
  it('filters with nested and/or, sorts and pages', async () => {
    const filter = {
      or: [
        {
          and: [
            { property: 'Priority', select: { equals: 'High' } },
            { property: 'Done', checkbox: { equals: false } },
          ],
        },
        { property: 'Tags', multi_select: { contains: 'docs' } },
      ],
    };
    const sorts = [{ property: 'Estimate', direction: 'descending' }];
    const first = await ok('query_data_source', {
      data_source_id: sim.ids.tasksDataSource,
      filter: JSON.stringify(filter),
      sorts: JSON.stringify(sorts),
      page_size: 1,
    });
    expect(first.has_more).toBe(true);
    const rest = await ok('query_data_source', {
      data_source_id: sim.ids.tasksDataSource,
      filter: JSON.stringify(filter),
      sorts: JSON.stringify(sorts),
      start_cursor: first.next_cursor,
    });
    const names = [...first.results, ...rest.results].map((r: any) => text(r.properties.Name.title));
    // Rows created by other tests (High, not done) may join; the seeded ones come in estimate order.
    expect(names.filter((n) => ['Write API docs', 'Set up CI', 'Fix login bug'].includes(n))).toEqual(['Write API docs', 'Set up CI']);
    expect(Object.keys(first.results[0]).sort()).toEqual(['id', 'properties']);
  });

  it('sends filter_properties as repeated query parameters of property ids, each encoded exactly once', async () => {
    const ds = await ok('retrieve_data_source', { data_source_id: sim.ids.tasksDataSource });
    // Notion shows ids URL-encoded; the query string must carry ":UJq" encoded once ("%3AUJq"), not "%253AUJq".
    expect(ds.properties.Status.id).toBe('%3AUJq');
    const before = sim.requests.length;
    for (const wanted of [
      ['Name', 'Status'],
      ['title', '%3AUJq'],
    ]) {
      const res = await ok('query_data_source', { data_source_id: sim.ids.tasksDataSource, filter_properties: wanted, page_size: 3 });
      const query = requestsSince(before)
        .filter((r) => r.path.endsWith('/query'))
        .at(-1)!;
      expect(query.query.getAll('filter_properties')).toEqual(['title', ':UJq']);
      for (const row of res.results) expect(Object.keys(row.properties).sort()).toEqual(['Name', 'Status']);
    }
  });

  it('refuses malformed JSON text naming the argument, before any request and without charge', async () => {
    const credits = await balance();
    const before = sim.requests.length;
    const broken = await fails('query_data_source', { data_source_id: sim.ids.tasksDataSource, filter: '{"property": "Done",' });
    expect(broken.code).toBe('invalid_arguments');
    expect(broken.message).toMatch(/^"filter" is not valid JSON text/);
    const notArray = await fails('query_data_source', { data_source_id: sim.ids.tasksDataSource, sorts: '{"property":"Name"}' });
    expect(notArray.message).toBe('"sorts" must be the JSON text of an array');
    expect(sim.requests.length).toBe(before);
    expect(await balance()).toBe(credits);
  });
});

describe('list_data_source_templates', () => {
  it('lists templates, filters by name and pages', async () => {
    const all = await ok('list_data_source_templates', { data_source_id: sim.ids.tasksDataSource });
    expect(all.templates).toEqual(
      expect.arrayContaining([
        { id: sim.ids.bugReportTemplate, name: 'Bug report', is_default: true },
        { id: sim.ids.featureTemplate, name: 'Feature request', is_default: false },
      ]),
    );
    expect(all).toMatchObject({ has_more: false, next_cursor: null });
    expect((await ok('list_data_source_templates', { data_source_id: sim.ids.tasksDataSource, name: 'bug' })).templates.map((t: any) => t.name)).toEqual([
      'Bug report',
    ]);
    const one = await ok('list_data_source_templates', { data_source_id: sim.ids.tasksDataSource, page_size: 1 });
    expect(one.templates).toHaveLength(1);
    expect(one.has_more).toBe(true);
    const next = await ok('list_data_source_templates', { data_source_id: sim.ids.tasksDataSource, page_size: 1, start_cursor: one.next_cursor });
    expect(next.templates[0].id).not.toBe(one.templates[0].id);
  });
});

describe('errors', () => {
  it('an unshared page is not found, with the hint to share it', async () => {
    const e = await fails('get_page', { page_id: sim.ids.privatePage });
    expect(e).toMatchObject({ code: 'object_not_found', provider_status: 404, retryable: false });
    expect(e.message).toContain("Share it with the integration from the page's ••• menu > Connections.");
    expect(e.message).toContain('Could not find page with ID');
    expect((await fails('retrieve_data_source', { data_source_id: sim.ids.privateDataSource })).code).toBe('object_not_found');
    // A database id where a data source id is expected is not found either.
    expect((await fails('query_data_source', { data_source_id: sim.ids.projectsDatabase })).code).toBe('object_not_found');
  });

  it('an unknown property is an invalid property', async () => {
    const row = await fails('create_page', { title: 'x', parent_data_source_id: sim.ids.tasksDataSource, properties: { Colour: { select: { name: 'Red' } } } });
    expect(row.code).toBe('invalid_property');
    expect(row.message).toContain('Colour is not a property that exists');
    const filter = await fails('query_data_source', { data_source_id: sim.ids.tasksDataSource, filter: '{"property":"Colour","select":{"equals":"Red"}}' });
    expect(filter.code).toBe('invalid_property');
    const selected = await fails('query_data_source', { data_source_id: sim.ids.tasksDataSource, filter_properties: ['Colour'] });
    expect(selected).toMatchObject({ code: 'invalid_property' });
    expect(selected.message).toContain('"Colour" is not a property of this data source');
  });

  it('a bad date or an unknown status option is a validation error', async () => {
    const date = await fails('create_page', { title: 'x', parent_data_source_id: sim.ids.tasksDataSource, properties: { Due: { start: '01/12/2025' } } });
    expect(date).toMatchObject({ code: 'validation_error', provider_status: 400 });
    expect(date.message).toContain('ISO 8601');
    const status = await fails('create_page', { title: 'x', parent_data_source_id: sim.ids.tasksDataSource, properties: { Status: { name: 'Blocked' } } });
    expect(status.code).toBe('validation_error');
    expect(status.message).toContain('Status option "Blocked" does not exist');
  });

  it('a rejected token is unauthorized', async () => {
    const e = await fails('search_with_revoked_token', { query: 'Welcome' });
    expect(e).toMatchObject({ code: 'unauthorized', provider_status: 401 });
    expect(e.message).toContain('API token is invalid.');
    expect(e.message).not.toContain('ntn_revoked');
  });

  it('a 429 is rate_limited with Retry-After, retryable and refunded', async () => {
    const credits = await balance();
    sim.faults.push(rateLimitFault(7, { pathPrefix: '/v1/search' }));
    const e = await fails('search_pages', { query: 'Welcome' });
    expect(e).toMatchObject({ code: 'rate_limited', retryable: true, provider_status: 429 });
    expect(e.message).toContain('(retry after 7 s)');
    expect(await balance()).toBe(credits);
    // A successful call is charged.
    await ok('search_pages', { query: 'Welcome' });
    expect(await balance()).toBe(credits - 1);
  });
});

describe('markdown round trip through Notion', () => {
  it.each(fixtures)('$name: markdown -> create_page -> get_page_content -> the same markdown', async ({ name, markdown }) => {
    const created = await ok('create_page', { title: `Round trip ${name}`, parent_page_id: sim.ids.welcomePage, content: markdown });
    const content = await ok('get_page_content', { page_id: created.id });
    expect(content.markdown).toBe(markdown);
  });
});
