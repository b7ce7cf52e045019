import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rateLimitFault, startNotionSandbox, type NotionSandbox } from '../../sandboxes/notion/notion-sandbox.ts';

let sim: NotionSandbox;
beforeAll(async () => {
  // Long enough that "blank at first" holds on a busy machine; the content is then waited for.
  sim = await startNotionSandbox({ templateDelayMs: 1000 });
});
afterAll(() => sim.close());

type Answer = { status: number; json: any; headers: Headers };

async function call(method: string, path: string, payload?: unknown, headers: Record<string, string> = {}): Promise<Answer> {
  const res = await fetch(`${sim.url}/v1${path}`, {
    method,
    headers: { authorization: `Bearer ${sim.token}`, 'notion-version': '2025-09-03', 'content-type': 'application/json', ...headers },
    body: payload === undefined ? undefined : typeof payload === 'string' ? payload : JSON.stringify(payload),
  });
  return { status: res.status, json: await res.json(), headers: res.headers };
}

const ok = async (method: string, path: string, payload?: unknown) => {
  const answer = await call(method, path, payload);
  expect(answer.status, JSON.stringify(answer.json)).toBe(200);
  return answer.json;
};

/** Asserts Notion's error body shape, status, code and message. */
function expectError(answer: Answer, status: number, code: string, message?: string | RegExp) {
  expect(answer.status).toBe(status);
  expect(answer.json).toMatchObject({ object: 'error', status, code });
  expect(answer.json.request_id).toMatch(/^[0-9a-f-]{36}$/);
  if (typeof message === 'string') expect(answer.json.message).toBe(message);
  else if (message) expect(answer.json.message).toMatch(message);
}

const text = (content: string) => [{ text: { content } }];
const titles = (results: any[]) =>
  results.map((r) =>
    r.object === 'page'
      ? (Object.values(r.properties).find((p: any) => p.type === 'title') as any).title.map((t: any) => t.plain_text).join('')
      : r.title[0]?.plain_text,
  );
const rowNames = (results: any[]) => results.map((r) => r.properties.Name.title.map((t: any) => t.plain_text).join('')).sort();

describe('authentication and versions', () => {
  it('rejects a missing or unknown token with 401 unauthorized', async () => {
    const missing = await fetch(`${sim.url}/v1/users/me`, { headers: { 'notion-version': '2025-09-03' } });
    expectError({ status: missing.status, json: await missing.json(), headers: missing.headers }, 401, 'unauthorized', 'API token is invalid.');
    expectError(await call('GET', '/users/me', undefined, { authorization: 'Bearer ntn_nope' }), 401, 'unauthorized', 'API token is invalid.');
  });

  it('accepts ntn_ and legacy secret_ tokens', async () => {
    expect(sim.token.startsWith('ntn_')).toBe(true);
    expect((await call('GET', '/users/me', undefined, { authorization: `Bearer ${sim.legacyToken}` })).json.type).toBe('bot');
  });

  it('requires Notion-Version', async () => {
    const res = await fetch(`${sim.url}/v1/users/me`, { headers: { authorization: `Bearer ${sim.token}` } });
    expectError(
      { status: res.status, json: await res.json(), headers: res.headers },
      400,
      'missing_version',
      'Notion-Version header failed validation: Notion-Version header should be defined, instead was `undefined`.',
    );
  });

  it('answers invalid_request_url for data sources under an older version, and for unknown paths', async () => {
    expectError(
      await call('GET', `/data_sources/${sim.ids.tasksDataSource}`, undefined, { 'notion-version': '2022-06-28' }),
      400,
      'invalid_request_url',
      'Invalid request URL.',
    );
    expectError(await call('POST', `/databases/${sim.ids.projectsDatabase}/query`, {}), 400, 'invalid_request_url', 'Invalid request URL.');
  });

  it('drops `archived` under 2026-03-11 but keeps both under 2025-09-03', async () => {
    const current = await ok('GET', `/pages/${sim.ids.welcomePage}`);
    expect(current).toMatchObject({ archived: false, in_trash: false });
    const newer = (await call('GET', `/pages/${sim.ids.welcomePage}`, undefined, { 'notion-version': '2026-03-11' })).json;
    expect(newer.in_trash).toBe(false);
    expect('archived' in newer).toBe(false);
  });

  it('answers scripted 429s with Retry-After and Notion’s body', async () => {
    sim.faults.push(rateLimitFault(7, { pathPrefix: '/v1/search' }));
    const limited = await call('POST', '/search', {});
    expectError(limited, 429, 'rate_limited', 'You have been rate limited. Please try again in a few minutes.');
    expect(limited.headers.get('retry-after')).toBe('7');
    expect((await call('POST', '/search', {})).status).toBe(200);
  });

  it('answers invalid_json for a malformed body and records requests', async () => {
    expectError(await call('POST', '/search', '{"query":'), 400, 'invalid_json', 'Error parsing JSON body.');
    expect(sim.requests.at(-1)).toMatchObject({ method: 'POST', path: '/v1/search', body: '{"query":' });
  });
});

describe('search', () => {
  it('pages through shared pages and data sources with cursors', async () => {
    const seen: string[] = [];
    let cursor: string | undefined;
    let rounds = 0;
    do {
      const page = await ok('POST', '/search', { page_size: 7, start_cursor: cursor });
      expect(page).toMatchObject({ object: 'list', type: 'page_or_data_source', page_or_data_source: {} });
      expect(page.results.length).toBeLessThanOrEqual(7);
      seen.push(...page.results.map((r: any) => r.id));
      cursor = page.next_cursor ?? undefined;
      expect(page.has_more).toBe(cursor !== undefined);
      rounds++;
    } while (cursor);
    expect(rounds).toBeGreaterThan(2);
    expect(new Set(seen).size).toBe(seen.length);
    expect(seen).toContain(sim.ids.welcomePage);
    expect(seen).toContain(sim.ids.tasksDataSource);
    expect(seen).not.toContain(sim.ids.privatePage);
    expect(seen).not.toContain(sim.ids.privateDataSource);
    expect(seen).not.toContain(sim.ids.bugReportTemplate);
  });

  it('filters by object type and matches titles', async () => {
    const sources = await ok('POST', '/search', { filter: { property: 'object', value: 'data_source' } });
    expect(sources.results.every((r: any) => r.object === 'data_source')).toBe(true);
    expect(titles(sources.results).sort()).toEqual(['Milestones', 'Tasks']);
    const weeks = await ok('POST', '/search', { query: 'meeting notes WEEK', filter: { property: 'object', value: 'page' } });
    expect(weeks.results).toHaveLength(12);
  });

  it('sorts by last_edited_time in both directions', async () => {
    const asc = await ok('POST', '/search', { sort: { timestamp: 'last_edited_time', direction: 'ascending' } });
    const times = asc.results.map((r: any) => r.last_edited_time);
    expect([...times].sort()).toEqual(times);
    const desc = await ok('POST', '/search', { sort: { timestamp: 'last_edited_time', direction: 'descending' } });
    expect(desc.results.at(-1).last_edited_time).toBe(times[0]);
  });

  it('rejects the old "database" filter value, page_size over 100 and unknown keys', async () => {
    expectError(
      await call('POST', '/search', { filter: { property: 'object', value: 'database' } }),
      400,
      'validation_error',
      'body failed validation: body.filter.value should be `"page"` or `"data_source"`, instead was `"database"`.',
    );
    expectError(
      await call('POST', '/search', { page_size: 101 }),
      400,
      'validation_error',
      'body failed validation: body.page_size should be ≤ `100`, instead was `101`.',
    );
    expectError(await call('POST', '/search', { start_cursor: 'nope' }), 400, 'validation_error', /body.start_cursor should be a valid uuid/);
  });
});

describe('pages and blocks', () => {
  it('retrieves a page with ids with or without dashes, and 404s unshared ones with Notion’s message', async () => {
    const page = await ok('GET', `/pages/${sim.ids.welcomePage.replace(/-/g, '')}`);
    expect(page).toMatchObject({ object: 'page', id: sim.ids.welcomePage, parent: { type: 'workspace', workspace: true } });
    expect(page.url).toBe(`https://www.notion.so/Welcome-${sim.ids.welcomePage.replace(/-/g, '')}`);
    expect(page.properties.title.title[0]).toMatchObject({ plain_text: 'Welcome', href: null, annotations: { bold: false, code: false, color: 'default' } });
    expectError(
      await call('GET', `/pages/${sim.ids.privatePage}`),
      404,
      'object_not_found',
      `Could not find page with ID: ${sim.ids.privatePage}. Make sure the relevant pages and databases are shared with your integration.`,
    );
    expectError(await call('GET', `/blocks/${sim.ids.privatePage}/children`), 404, 'object_not_found', /^Could not find block with ID/);
    expectError(
      await call('GET', '/pages/not-a-uuid'),
      400,
      'validation_error',
      'path failed validation: path.page_id should be a valid uuid, instead was `"not-a-uuid"`.',
    );
  });

  it('lists block children one level at a time, paginated, with has_children', async () => {
    const first = await ok('GET', `/blocks/${sim.ids.welcomePage}/children?page_size=5`);
    expect(first).toMatchObject({ object: 'list', type: 'block', block: {}, has_more: true });
    expect(first.results.map((b: any) => b.type)).toEqual(['heading_1', 'paragraph', 'heading_2', 'bulleted_list_item', 'bulleted_list_item']);
    expect(first.results[1].paragraph.rich_text.map((t: any) => [t.plain_text, t.annotations.bold, t.href])).toContainEqual([
      'API docs',
      false,
      'https://developers.notion.com',
    ]);
    const rest = await ok('GET', `/blocks/${sim.ids.welcomePage}/children?start_cursor=${first.next_cursor}`);
    const types = rest.results.map((b: any) => b.type);
    expect(types).toEqual(expect.arrayContaining(['to_do', 'toggle', 'code', 'quote', 'divider', 'child_page', 'child_database']));
    expect(rest.has_more).toBe(false);
    const nested = first.results[3];
    expect(nested).toMatchObject({ id: sim.ids.nestedListItem, has_children: true });
    const level2 = await ok('GET', `/blocks/${nested.id}/children`);
    expect(level2.results.map((b: any) => b.bulleted_list_item.rich_text[0].plain_text)).toEqual(['Nested item A', 'Nested item B']);
    expect(level2.results[1].has_children).toBe(true);
    const toggle = await ok('GET', `/blocks/${sim.ids.toggleBlock}/children`);
    expect(toggle.results.map((b: any) => b.type)).toEqual(['paragraph', 'to_do']);
    const code = rest.results.find((b: any) => b.type === 'code');
    expect(code.code.language).toBe('typescript');
  });

  it('creates a page under a page with children, and it shows up as a child_page', async () => {
    const page = await ok('POST', '/pages', {
      parent: { page_id: sim.ids.gettingStartedPage },
      properties: { title: { title: text('Child') } },
      children: [{ paragraph: { rich_text: text('hi'), children: [{ to_do: { rich_text: text('x'), checked: true } }] } }],
    });
    expect(page.parent).toEqual({ type: 'page_id', page_id: sim.ids.gettingStartedPage });
    const blocks = await ok('GET', `/blocks/${page.id}/children`);
    expect(blocks.results[0]).toMatchObject({ type: 'paragraph', has_children: true });
    const parentBlocks = await ok('GET', `/blocks/${sim.ids.gettingStartedPage}/children`);
    expect(parentBlocks.results.at(-1)).toMatchObject({ id: page.id, type: 'child_page', child_page: { title: 'Child' } });
  });

  it('validates page creation like Notion', async () => {
    const parent = { page_id: sim.ids.welcomePage };
    expectError(
      await call('POST', '/pages', { parent }),
      400,
      'validation_error',
      'body failed validation: body.properties should be defined, instead was `undefined`.',
    );
    expectError(
      await call('POST', '/pages', { parent, properties: { Status: { select: { name: 'x' } } } }),
      400,
      'validation_error',
      'Status is not a property that exists.',
    );
    const long = 'y'.repeat(2301);
    expectError(
      await call('POST', '/pages', { parent, properties: {}, children: [{ paragraph: { rich_text: text('ok') } }, { paragraph: { rich_text: text(long) } }] }),
      400,
      'validation_error',
      'body failed validation: body.children[1].paragraph.rich_text[0].text.content.length should be ≤ `2000`, instead was `2301`.',
    );
    expectError(await call('POST', '/pages', { parent: { workspace: true }, properties: {} }), 400, 'validation_error', /workspace level/);
    const pub = await fetch(`${sim.url}/v1/pages`, {
      method: 'POST',
      headers: { authorization: `Bearer ${sim.publicToken}`, 'notion-version': '2025-09-03', 'content-type': 'application/json' },
      body: JSON.stringify({ parent: { workspace: true }, properties: { title: { title: text('Top level') } } }),
    });
    expect(pub.status).toBe(200);
    expect((await pub.json()).parent).toEqual({ type: 'workspace', workspace: true });
  });

  it('refuses a text link that is not an absolute http(s) URL, as Notion does', async () => {
    const page = sim.ids.meetingNotes[5];
    const linked = (url: string) => ({ paragraph: { rich_text: [{ type: 'text', text: { content: 'docs', link: { url } } }] } });
    for (const url of ['./setup.md', '#top', 'mailto:a@example.com', 'javascript:alert(1)', 'data:text/plain,hi', 'example.com/docs']) {
      expectError(
        await call('PATCH', `/blocks/${page}/children`, { children: [linked(url)] }),
        400,
        'validation_error',
        'Content creation Failed. Fix the following: \nInvalid URL for link.',
      );
    }
    expect((await ok('PATCH', `/blocks/${page}/children`, { children: [linked('https://example.com/docs')] })).results).toHaveLength(1);
  });

  it('appends at most 100 blocks, two levels deep, with valid languages', async () => {
    const page = sim.ids.meetingNotes[0];
    const para = { paragraph: { rich_text: text('p') } };
    expectError(
      await call('PATCH', `/blocks/${page}/children`, { children: Array(101).fill(para) }),
      400,
      'validation_error',
      'body failed validation: body.children.length should be ≤ `100`, instead was `101`.',
    );
    const deep = { bulleted_list_item: { rich_text: text('1'), children: [{ bulleted_list_item: { rich_text: text('2'), children: [para] } }] } };
    expectError(
      await call('PATCH', `/blocks/${page}/children`, { children: [deep] }),
      400,
      'validation_error',
      /^body failed validation: body.children\[0\].bulleted_list_item.children\[0\].bulleted_list_item.children should be not present/,
    );
    expectError(
      await call('PATCH', `/blocks/${page}/children`, { children: [{ code: { rich_text: text('x'), language: 'klingon' } }] }),
      400,
      'validation_error',
      /body.children\[0\].code.language should be `"abap"`/,
    );
    const added = await ok('PATCH', `/blocks/${page}/children`, { children: Array(100).fill(para) });
    expect(added).toMatchObject({ object: 'list', type: 'block' });
    expect(added.results).toHaveLength(100);
    expect(sim.blocks(page)).toHaveLength(101);
  });

  it('trashes and restores a page; a trashed page refuses edits', async () => {
    const created = await ok('POST', '/pages', { parent: { page_id: sim.ids.welcomePage }, properties: { title: { title: text('Temp') } } });
    const trashed = await ok('PATCH', `/pages/${created.id}`, { in_trash: true });
    expect(trashed).toMatchObject({ in_trash: true, archived: true });
    expectError(
      await call('PATCH', `/pages/${created.id}`, { properties: { title: { title: text('x') } } }),
      400,
      'validation_error',
      "Can't edit block that is archived. You must unarchive the block before editing.",
    );
    expectError(await call('PATCH', `/blocks/${created.id}/children`, { children: [] }), 400, 'validation_error', /archived/);
    const search = await ok('POST', '/search', { query: 'Temp' });
    expect(search.results).toHaveLength(0);
    expect(await ok('PATCH', `/pages/${created.id}`, { archived: false })).toMatchObject({ in_trash: false, archived: false });
  });
});

describe('data source rows', () => {
  it('creates a row with every property type, by name or id', async () => {
    const ds = await ok('GET', `/data_sources/${sim.ids.tasksDataSource}`);
    const estimateId = ds.properties.Estimate.id;
    const row = await ok('POST', '/pages', {
      parent: { type: 'data_source_id', data_source_id: sim.ids.tasksDataSource.replace(/-/g, '') },
      properties: {
        Name: { title: text('Every type') },
        Notes: {
          rich_text: [
            { text: { content: 'see ', link: null } },
            { text: { content: 'docs', link: { url: 'https://example.com' } }, annotations: { bold: true } },
          ],
        },
        [estimateId]: { number: 13 },
        Priority: { select: { name: 'High' } },
        Tags: { multi_select: [{ name: 'docs' }, { name: 'brand-new' }] },
        Due: { date: { start: '2025-10-01', end: '2025-10-03' } },
        Done: { checkbox: true },
        Status: { status: { name: 'In progress' } },
        Assignee: { people: [{ object: 'user', id: sim.ids.users.ada }] },
        Link: { url: 'https://example.com/x' },
        Contact: { email: 'x@example.com' },
      },
    });
    expect(row.parent).toEqual({ type: 'data_source_id', data_source_id: sim.ids.tasksDataSource, database_id: sim.ids.projectsDatabase });
    const p = row.properties;
    expect(p.Name).toMatchObject({ id: 'title', type: 'title' });
    expect(p.Notes.rich_text.map((t: any) => [t.plain_text, t.href, t.annotations.bold])).toEqual([
      ['see ', null, false],
      ['docs', 'https://example.com', true],
    ]);
    expect(p.Estimate).toEqual({ id: estimateId, type: 'number', number: 13 });
    expect(p.Priority.select).toMatchObject({ name: 'High', color: 'red' });
    expect(p.Tags.multi_select.map((o: any) => o.name)).toEqual(['docs', 'brand-new']);
    expect(p.Due.date).toEqual({ start: '2025-10-01', end: '2025-10-03', time_zone: null });
    expect(p.Done.checkbox).toBe(true);
    expect(p.Status.status.name).toBe('In progress');
    expect(p.Assignee.people[0]).toMatchObject({ object: 'user', id: sim.ids.users.ada, name: 'Ada Lovelace' });
    expect(p.Link.url).toBe('https://example.com/x');
    expect(p.Contact.email).toBe('x@example.com');
    expect(p.Created.created_time).toBe(row.created_time);
    // Notion adds unknown select options to the schema.
    const after = await ok('GET', `/data_sources/${sim.ids.tasksDataSource}`);
    expect(after.properties.Tags.multi_select.options.map((o: any) => o.name)).toContain('brand-new');
  });

  it('gives a new row the default status and rejects bad values as Notion does', async () => {
    const parent = { data_source_id: sim.ids.tasksDataSource };
    const plain = await ok('POST', '/pages', { parent, properties: { Name: { title: text('Defaults') } } });
    expect(plain.properties.Status.status.name).toBe('Not started');
    expect(plain.properties.Priority.select).toBeNull();
    const bad = (properties: unknown) => call('POST', '/pages', { parent, properties });
    expectError(
      await bad({ Nope: { rich_text: [] }, Estimate: { rich_text: [] } }),
      400,
      'validation_error',
      'Nope is not a property that exists. Estimate is expected to be number.',
    );
    expectError(
      await bad({ Due: { date: { start: '2025-13-01' } } }),
      400,
      'validation_error',
      'body failed validation: body.properties.Due.date.start should be a valid ISO 8601 date string, instead was `"2025-13-01"`.',
    );
    expectError(
      await bad({ Status: { status: { name: 'Blocked' } } }),
      400,
      'validation_error',
      'Invalid status option. Status option "Blocked" does not exist".',
    );
    expectError(
      await bad({ Estimate: { number: '5' } }),
      400,
      'validation_error',
      'body failed validation: body.properties.Estimate.number should be a number or `null`, instead was `"5"`.',
    );
    expectError(
      await bad({ Done: { checkbox: 'yes' } }),
      400,
      'validation_error',
      'body failed validation: body.properties.Done.checkbox should be a boolean, instead was `"yes"`.',
    );
    expectError(await bad({ Tags: { multi_select: [{ name: 'a,b' }] } }), 400, 'validation_error', 'Invalid multi_select option, commas not allowed: a,b');
  });

  it('accepts a single-source database id as parent but not a multi-source one, and 404s a database id as data source', async () => {
    expectError(await call('POST', '/pages', { parent: { database_id: sim.ids.projectsDatabase }, properties: {} }), 400, 'validation_error', /2 data sources/);
    expectError(
      await call('GET', `/data_sources/${sim.ids.projectsDatabase}`),
      404,
      'object_not_found',
      `Could not find data_source with ID: ${sim.ids.projectsDatabase}. Make sure the relevant pages and databases are shared with your integration.`,
    );
    expectError(await call('GET', `/databases/${sim.ids.tasksDataSource}`), 404, 'object_not_found', /^Could not find database with ID/);
  });

  it('updates row properties and filters retrieved properties by repeated query parameter', async () => {
    const row = (await ok('POST', '/pages', { parent: { data_source_id: sim.ids.tasksDataSource }, properties: { Priority: { select: { name: 'Low' } } } })).id;
    const updated = await ok('PATCH', `/pages/${row}`, { properties: { Estimate: { number: 21 }, Priority: { select: null } } });
    expect(updated.properties.Estimate.number).toBe(21);
    expect(updated.properties.Priority.select).toBeNull();
    // The id as Notion shows it is URL-encoded: decoded once, then encoded once by the query string.
    const slim = await ok(
      'GET',
      `/pages/${row}?filter_properties=title&filter_properties=${encodeURIComponent(decodeURIComponent(updated.properties.Estimate.id))}`,
    );
    expect(Object.keys(slim.properties).sort()).toEqual(['Estimate', 'Name']);
  });
});

describe('templates', () => {
  it('lists templates without a list wrapper, filtered by name and paged', async () => {
    const all = await ok('GET', `/data_sources/${sim.ids.tasksDataSource}/templates`);
    expect(Object.keys(all).sort()).toEqual(['has_more', 'next_cursor', 'templates']);
    expect(all.templates).toEqual([
      { id: sim.ids.bugReportTemplate, name: 'Bug report', is_default: true },
      { id: sim.ids.featureTemplate, name: 'Feature request', is_default: false },
    ]);
    const named = await ok('GET', `/data_sources/${sim.ids.tasksDataSource}/templates?name=feature`);
    expect(named.templates.map((t: any) => t.name)).toEqual(['Feature request']);
    const first = await ok('GET', `/data_sources/${sim.ids.tasksDataSource}/templates?page_size=1`);
    expect(first).toMatchObject({ has_more: true, next_cursor: sim.ids.featureTemplate });
  });

  it('creates a page from the default template: blank at first, content shortly after', async () => {
    const page = await ok('POST', '/pages', {
      parent: { data_source_id: sim.ids.tasksDataSource },
      properties: { Name: { title: text('Crash on save') } },
      template: { type: 'default' },
    });
    expect((await ok('GET', `/blocks/${page.id}/children`)).results).toHaveLength(0);
    await expect
      .poll(async () => (await ok('GET', `/blocks/${page.id}/children`)).results.map((b: any) => b.type), { timeout: 10_000 })
      .toEqual(['heading_2', 'numbered_list_item', 'heading_2', 'paragraph', 'to_do']);
    const after = await ok('GET', `/pages/${page.id}`);
    expect(after.properties.Name.title[0].plain_text).toBe('Crash on save');
    expect(after.properties.Priority.select.name).toBe('High');
  });

  it('creates from a template id, and refuses children together with a template', async () => {
    const page = await ok('POST', '/pages', {
      parent: { data_source_id: sim.ids.tasksDataSource },
      properties: {},
      template: { type: 'template_id', template_id: sim.ids.featureTemplate },
    });
    await expect.poll(() => sim.blocks(page.id).map((b) => b.type), { timeout: 10_000 }).toEqual(['heading_2', 'paragraph']);
    expectError(
      await call('POST', '/pages', {
        parent: { data_source_id: sim.ids.tasksDataSource },
        properties: {},
        template: { type: 'default' },
        children: [{ paragraph: { rich_text: [] } }],
      }),
      400,
      'validation_error',
      /^body failed validation: body.children should be not present/,
    );
    expectError(
      await call('POST', '/pages', { parent: { data_source_id: sim.ids.tasksDataSource }, properties: {}, template: { type: 'template_id' } }),
      400,
      'validation_error',
      'body failed validation: body.template.template_id should be defined, instead was `undefined`.',
    );
  });
});

describe('data source query', () => {
  const query = (payload: unknown, search = '') => call('POST', `/data_sources/${sim.ids.tasksDataSource}/query${search}`, payload);
  const names = async (filter: unknown) => {
    const answer = await query({ filter });
    expect(answer.status, JSON.stringify(answer.json)).toBe(200);
    return rowNames(answer.json.results);
  };
  const seedRows = ['Archive old tickets', 'Design landing page', 'Fix login bug', 'Set up CI', 'Write API docs'];
  const onlySeed = (list: string[]) => list.filter((n) => seedRows.includes(n));

  it('filters each property type with its conditions', async () => {
    expect(onlySeed(await names({ property: 'Name', title: { contains: 'LOGIN' } }))).toEqual(['Fix login bug']);
    expect(onlySeed(await names({ property: 'Name', title: { starts_with: 'Set' } }))).toEqual(['Set up CI']);
    expect(onlySeed(await names({ property: 'Name', title: { ends_with: 'docs' } }))).toEqual(['Write API docs']);
    expect(onlySeed(await names({ property: 'Notes', rich_text: { is_empty: true } }))).toEqual(['Archive old tickets', 'Design landing page']);
    expect(onlySeed(await names({ property: 'Notes', rich_text: { does_not_contain: 'e' } }))).toEqual([
      'Archive old tickets',
      'Design landing page',
      'Set up CI',
    ]);
    expect(onlySeed(await names({ property: 'Estimate', number: { greater_than: 4 } }))).toEqual(['Design landing page', 'Fix login bug']);
    expect(onlySeed(await names({ property: 'Estimate', number: { is_empty: true } }))).toEqual(['Archive old tickets']);
    expect(onlySeed(await names({ property: 'Priority', select: { equals: 'High' } }))).toEqual(['Fix login bug', 'Set up CI']);
    expect(onlySeed(await names({ property: 'Tags', multi_select: { contains: 'frontend' } }))).toEqual(['Design landing page', 'Fix login bug']);
    expect(onlySeed(await names({ property: 'Due', date: { on_or_before: '2025-07-01' } }))).toEqual(['Fix login bug', 'Write API docs']);
    expect(onlySeed(await names({ property: 'Due', date: { after: '2025-07-01' } }))).toEqual(['Design landing page']);
    expect(onlySeed(await names({ property: 'Due', date: { equals: '2025-08-10' } }))).toEqual(['Design landing page']);
    expect(onlySeed(await names({ property: 'Done', checkbox: { equals: true } }))).toEqual(['Archive old tickets', 'Fix login bug']);
    expect(onlySeed(await names({ property: 'Status', status: { does_not_equal: 'Done' } }))).toEqual(['Design landing page', 'Set up CI', 'Write API docs']);
    expect(onlySeed(await names({ property: 'Assignee', people: { contains: sim.ids.users.grace } }))).toEqual(['Design landing page', 'Fix login bug']);
    expect(onlySeed(await names({ property: 'Link', url: { is_not_empty: true } }))).toEqual(['Write API docs']);
    expect(onlySeed(await names({ property: 'Contact', email: { equals: 'ada@example.com' } }))).toEqual(['Write API docs']);
    expect(onlySeed(await names({ timestamp: 'created_time', created_time: { before: '2025-06-02T12:30:00.000Z' } }))).toEqual([]);
    expect(onlySeed(await names({ timestamp: 'created_time', created_time: { on_or_before: '2025-06-03T04:00:00.000Z' } }))).toEqual([
      'Fix login bug',
      'Write API docs',
    ]);
  });

  it('combines filters with nested and/or', async () => {
    const filter = {
      or: [
        { property: 'Priority', select: { equals: 'Low' } },
        {
          and: [
            { property: 'Done', checkbox: { equals: false } },
            { property: 'Tags', multi_select: { contains: 'backend' } },
          ],
        },
      ],
    };
    expect(onlySeed(await names(filter))).toEqual(['Design landing page', 'Set up CI']);
    const tooDeep = { and: [{ or: [{ and: [{ property: 'Done', checkbox: { equals: true } }] }] }] };
    expectError(await query({ filter: tooDeep }), 400, 'validation_error', /body.filter.and\[0\].or\[0\].and should be not present/);
  });

  it('sorts by property and by timestamp, pages with cursors', async () => {
    const sorted = await query({
      sorts: [
        { property: 'Priority', direction: 'ascending' },
        { property: 'Name', direction: 'descending' },
      ],
    });
    const seed = sorted.json.results.map((r: any) => r.properties.Name.title[0]?.plain_text).filter((n: string) => seedRows.includes(n));
    // Select sorts follow option order (High, Medium, Low); empty values come last.
    expect(seed).toEqual(['Set up CI', 'Fix login bug', 'Write API docs', 'Design landing page', 'Archive old tickets']);
    const byCreated = await query({ sorts: [{ timestamp: 'created_time', direction: 'descending' }], page_size: 2 });
    expect(byCreated.json.has_more).toBe(true);
    const times = byCreated.json.results.map((r: any) => r.created_time);
    expect(times[0] >= times[1]).toBe(true);
    const next = await query({ sorts: [{ timestamp: 'created_time', direction: 'descending' }], page_size: 2, start_cursor: byCreated.json.next_cursor });
    expect(next.json.results[0].id).toBe(byCreated.json.next_cursor);
  });

  it('takes filter_properties as repeated query parameters of property ids, each encoded once, not in the body', async () => {
    const answer = await query({ page_size: 1 }, '?filter_properties=title&filter_properties=%3AUJq');
    expect(Object.keys(answer.json.results[0].properties).sort()).toEqual(['Name', 'Status']);
    // Encoded twice (what a client that does not decode Notion's ids first sends), the id matches nothing.
    expectError(await query({ page_size: 1 }, '?filter_properties=%253AUJq'), 400, 'validation_error', 'Could not find property with name or id: %3AUJq');
    expectError(
      await query({ filter_properties: ['Name'] }),
      400,
      'validation_error',
      'body failed validation: body.filter_properties should be not present, instead was `["Name"]`.',
    );
  });

  it('reports unknown properties and type mismatches with Notion’s messages', async () => {
    expectError(
      await query({ filter: { property: 'Nope', title: { equals: 'x' } } }),
      400,
      'validation_error',
      'Could not find property with name or id: Nope',
    );
    expectError(
      await query({ filter: { property: 'Status', select: { equals: 'Done' } } }),
      400,
      'validation_error',
      'The property type in the database does not match the property type of the filter provided: database property status does not match filter select',
    );
    expectError(
      await query({ sorts: [{ property: 'Nope', direction: 'ascending' }] }),
      400,
      'validation_error',
      'Could not find sort property with name or id: Nope',
    );
    expectError(
      await query({ filter: { property: 'Estimate', number: { equals: '3' } } }),
      400,
      'validation_error',
      'body failed validation: body.filter.number.equals should be a number, instead was `"3"`.',
    );
  });
});

describe('databases and data sources', () => {
  it('retrieves a database without schema but with its data sources', async () => {
    const db = await ok('GET', `/databases/${sim.ids.projectsDatabase}`);
    expect(db).toMatchObject({
      object: 'database',
      is_inline: false,
      in_trash: false,
      archived: false,
      parent: { type: 'page_id', page_id: sim.ids.welcomePage },
    });
    expect(db.properties).toBeUndefined();
    expect(db.data_sources).toEqual([
      { id: sim.ids.tasksDataSource, name: 'Tasks' },
      { id: sim.ids.milestonesDataSource, name: 'Milestones' },
    ]);
    const ds = await ok('GET', `/data_sources/${sim.ids.tasksDataSource}`);
    expect(ds).toMatchObject({
      object: 'data_source',
      parent: { type: 'database_id', database_id: sim.ids.projectsDatabase },
      database_parent: { type: 'page_id', page_id: sim.ids.welcomePage },
    });
    const types = Object.values(ds.properties).map((p: any) => p.type);
    expect(types).toEqual(
      expect.arrayContaining(['title', 'rich_text', 'number', 'select', 'multi_select', 'date', 'checkbox', 'status', 'people', 'url', 'email']),
    );
    expect(ds.properties.Status.status.groups.map((g: any) => g.name)).toEqual(['To-do', 'In progress', 'Complete']);
    expectError(await call('GET', `/databases/${sim.ids.privateDatabase}`), 404, 'object_not_found', /^Could not find database with ID/);
  });

  it('creates, updates, moves, trashes and restores a database', async () => {
    const created = await ok('POST', '/databases', {
      parent: { type: 'page_id', page_id: sim.ids.welcomePage },
      title: text('Bugs'),
      description: text('All the bugs'),
      is_inline: true,
      icon: { type: 'emoji', emoji: '🐛' },
      initial_data_source: { properties: { Title: { title: {} }, Severity: { select: { options: [{ name: 'S1', color: 'red' }] } } } },
    });
    expect(created).toMatchObject({ object: 'database', is_inline: true, icon: { type: 'emoji', emoji: '🐛' } });
    expect(created.data_sources).toHaveLength(1);
    const ds = await ok('GET', `/data_sources/${created.data_sources[0].id}`);
    expect(ds.properties.Severity.select.options).toEqual([expect.objectContaining({ name: 'S1', color: 'red' })]);
    expectError(
      await call('POST', '/databases', { parent: { page_id: sim.ids.welcomePage }, properties: { Name: { title: {} } } }),
      400,
      'validation_error',
      /body.properties should be not present/,
    );

    const moved = await ok('PATCH', `/databases/${created.id}`, {
      title: text('Bug tracker'),
      parent: { type: 'page_id', page_id: sim.ids.gettingStartedPage },
      is_inline: false,
    });
    expect(moved).toMatchObject({ is_inline: false, parent: { page_id: sim.ids.gettingStartedPage } });
    expect(moved.title[0].plain_text).toBe('Bug tracker');
    const children = await ok('GET', `/blocks/${sim.ids.gettingStartedPage}/children`);
    expect(children.results.some((b: any) => b.id === created.id && b.type === 'child_database')).toBe(true);

    expect(await ok('PATCH', `/databases/${created.id}`, { in_trash: true })).toMatchObject({ in_trash: true, archived: true });
    expectError(await call('PATCH', `/databases/${created.id}`, { title: text('x') }), 400, 'validation_error', /archived/);
    expect(await ok('PATCH', `/databases/${created.id}`, { in_trash: false })).toMatchObject({ in_trash: false });
  });

  it('adds a data source, edits its schema (add, rename, options, remove), trashes and moves it', async () => {
    const ds = await ok('POST', '/data_sources', {
      parent: { type: 'database_id', database_id: sim.ids.projectsDatabase },
      title: text('Risks'),
      properties: { Risk: { title: {} }, Impact: { number: { format: 'percent' } }, Level: { select: { options: [{ name: 'Low' }] } }, Owner: { people: {} } },
    });
    expect(ds.properties.Impact.number.format).toBe('percent');
    expect((await ok('GET', `/databases/${sim.ids.projectsDatabase}`)).data_sources.map((d: any) => d.name)).toContain('Risks');

    const patched = await ok('PATCH', `/data_sources/${ds.id}`, {
      title: text('Project risks'),
      properties: {
        Impact: { name: 'Impact %' },
        Level: { select: { options: [{ name: 'Low' }, { name: 'High', color: 'red' }] } },
        Owner: null,
        Mitigated: { checkbox: {} },
      },
    });
    expect(Object.keys(patched.properties).sort()).toEqual(['Impact %', 'Level', 'Mitigated', 'Risk']);
    expect(patched.properties['Impact %'].id).toBe(ds.properties.Impact.id);
    expect(patched.properties.Level.select.options.map((o: any) => o.name)).toEqual(['Low', 'High']);
    expect(patched.properties.Level.select.options[0].id).toBe(ds.properties.Level.select.options[0].id);
    expectError(await call('PATCH', `/data_sources/${ds.id}`, { properties: { Risk: null } }), 400, 'validation_error');
    expectError(await call('PATCH', `/data_sources/${ds.id}`, { properties: { Gone: null } }), 400, 'validation_error', 'Gone is not a property that exists.');

    expect(await ok('PATCH', `/data_sources/${ds.id}`, { in_trash: true })).toMatchObject({ in_trash: true, archived: true });
    expect(await ok('PATCH', `/data_sources/${ds.id}`, { in_trash: false })).toMatchObject({ in_trash: false });

    const other = await ok('POST', '/databases', { parent: { page_id: sim.ids.welcomePage }, title: text('Archive') });
    const movedDs = await ok('PATCH', `/data_sources/${ds.id}`, { parent: { type: 'database_id', database_id: other.id } });
    expect(movedDs.parent).toEqual({ type: 'database_id', database_id: other.id });
    expect((await ok('GET', `/databases/${other.id}`)).data_sources.map((d: any) => d.id)).toContain(ds.id);
    expect((await ok('GET', `/databases/${sim.ids.projectsDatabase}`)).data_sources.map((d: any) => d.id)).not.toContain(ds.id);
  });

  it('lists users and people values', async () => {
    const users = await ok('GET', '/users');
    expect(users).toMatchObject({ object: 'list', type: 'user' });
    expect(users.results.map((u: any) => u.name)).toEqual(expect.arrayContaining(['Ada Lovelace', 'Grace Hopper']));
    expect((await ok('GET', `/users/${sim.ids.users.grace}`)).person.email).toBe('grace@example.com');
  });
});
