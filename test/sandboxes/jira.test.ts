import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { SEED_USERS, WRONG_CREDENTIALS_BODY, startJiraSandbox, type JiraSandbox } from '../../sandboxes/jira/jira-sandbox.ts';

// A fixed clock (Thursday 2025-11-20 10:30 UTC) makes date functions and relative dates predictable.
const NOW = Date.UTC(2025, 10, 20, 10, 30);
const DAY = 86_400_000;
const adf = (t: string) => ({ type: 'doc', version: 1, content: [{ type: 'paragraph', content: [{ type: 'text', text: t }] }] });
const { alice, bob, carol } = SEED_USERS;

interface Answer {
  status: number;
  headers: Headers;
  text: string;
  json: any;
}

async function call(sim: JiraSandbox, method: string, path: string, opts: { body?: unknown; auth?: string | null } = {}): Promise<Answer> {
  const headers: Record<string, string> = { accept: 'application/json' };
  const auth = opts.auth === undefined ? sim.authHeader() : opts.auth;
  if (auth) headers.authorization = auth;
  if (opts.body !== undefined) headers['content-type'] = 'application/json';
  const res = await fetch(sim.url + path, {
    method,
    headers,
    body: opts.body === undefined ? undefined : typeof opts.body === 'string' ? opts.body : JSON.stringify(opts.body),
  });
  const text = await res.text();
  let json: unknown;
  try {
    json = text ? JSON.parse(text) : undefined;
  } catch {
    json = undefined;
  }
  return { status: res.status, headers: res.headers, text, json };
}

const jql = (q: string, extra = '') => `/rest/api/3/search/jql?jql=${encodeURIComponent(q)}${extra}`;

/** Keys matching a JQL query (all pages of one big page), in result order. */
async function keys(sim: JiraSandbox, q: string, auth?: string | null): Promise<string[]> {
  const r = await call(sim, 'GET', jql(q, '&fields=key&maxResults=1000'), { auth });
  expect(r.status, r.text).toBe(200);
  return r.json.issues.map((i: { key: string }) => i.key);
}

async function jqlError(sim: JiraSandbox, q: string): Promise<string[]> {
  const r = await call(sim, 'GET', jql(q));
  expect(r.status).toBe(400);
  expect(r.json.errors).toEqual({});
  return r.json.errorMessages;
}

describe('Jira sandbox: read-only endpoints', () => {
  let sim: JiraSandbox;
  beforeAll(async () => {
    sim = await startJiraSandbox({ now: () => NOW });
  });
  afterAll(() => sim.close());

  describe('authentication', () => {
    it('accepts Basic email:token and answers /myself', async () => {
      const r = await call(sim, 'GET', '/rest/api/3/myself');
      expect(r.status).toBe(200);
      expect(r.json).toMatchObject({
        accountId: alice.accountId,
        emailAddress: alice.email,
        displayName: 'Alice Admin',
        accountType: 'atlassian',
        active: true,
      });
      expect(r.json.self).toBe(`${sim.url}/rest/api/3/user?accountId=${alice.accountId}`);
    });

    it('answers a wrong token with the plain-text deprecation 401', async () => {
      const r = await call(sim, 'GET', '/rest/api/3/issue/DEMO-1', { auth: sim.authHeader(alice.email, 'wrong') });
      expect(r.status).toBe(401);
      expect(r.headers.get('content-type')).toMatch(/^text\/plain/);
      expect(r.text).toBe(
        'Basic authentication with passwords is deprecated.  For more information, see: https://developer.atlassian.com/cloud/confluence/deprecation-notice-basic-auth/',
      );
      expect(r.text).toBe(WRONG_CREDENTIALS_BODY);
      const unknownUser = await call(sim, 'GET', '/rest/api/3/myself', { auth: sim.authHeader('nobody@example.com', alice.apiToken) });
      expect(unknownUser.status).toBe(401);
      expect(unknownUser.text).toBe(WRONG_CREDENTIALS_BODY);
    });

    it('answers a non-Basic scheme and an anonymous /myself with the JSON 401', async () => {
      const body = { message: 'Client must be authenticated to access this resource.', 'status-code': 401 };
      const bearer = await call(sim, 'GET', '/rest/api/3/project/search', { auth: `Bearer ${alice.apiToken}` });
      expect(bearer.status).toBe(401);
      expect(bearer.json).toEqual(body);
      const anonymous = await call(sim, 'GET', '/rest/api/3/myself', { auth: null });
      expect(anonymous.status).toBe(401);
      expect(anonymous.json).toEqual(body);
    });

    it('treats a request without credentials as anonymous: 404 issues, empty lists, unknown projects', async () => {
      const issue = await call(sim, 'GET', '/rest/api/3/issue/DEMO-1', { auth: null });
      expect(issue.status).toBe(404);
      expect(issue.json).toEqual({ errorMessages: ['Issue does not exist or you do not have permission to see it.'], errors: {} });
      const projects = await call(sim, 'GET', '/rest/api/3/project/search', { auth: null });
      expect(projects.json).toMatchObject({ total: 0, values: [], isLast: true });
      const users = await call(sim, 'GET', '/rest/api/3/user/search?query=alice', { auth: null });
      expect(users.json).toEqual([]);
      const search = await call(sim, 'GET', jql('project = DEMO'), { auth: null });
      expect(search.status).toBe(400);
      expect(search.json.errorMessages).toEqual(["The value 'DEMO' does not exist for the field 'project'."]);
      expect(await keys(sim, 'summary ~ login', null)).toEqual([]);
      const create = await call(sim, 'POST', '/rest/api/3/issue', {
        auth: null,
        body: { fields: { project: { key: 'DEMO' }, summary: 'x', issuetype: { name: 'Task' } } },
      });
      expect(create.status).toBe(401);
    });

    it('lets a second user log in and hides the project he may not browse', async () => {
      const b = sim.credentialsFor(bob.email)!;
      const auth = sim.authHeader(b.email, b.apiToken);
      const me = await call(sim, 'GET', '/rest/api/3/myself', { auth });
      expect(me.json.accountId).toBe(bob.accountId);
      const sec = await call(sim, 'GET', '/rest/api/3/issue/SEC-1', { auth });
      expect(sec.status).toBe(404);
      expect((await call(sim, 'GET', '/rest/api/3/issue/SEC-1')).status).toBe(200);
    });
  });

  describe('get issue', () => {
    it('returns all fields by default, in Jira shapes and timestamp format', async () => {
      const r = await call(sim, 'GET', '/rest/api/3/issue/DEMO-3');
      expect(r.status).toBe(200);
      expect(r.json).toMatchObject({ id: '10002', key: 'DEMO-3', self: `${sim.url}/rest/api/3/issue/10002` });
      const f = r.json.fields;
      expect(f.summary).toBe('Login fails with SSO');
      expect(f.status).toMatchObject({ name: 'In Progress', id: '3', statusCategory: { key: 'indeterminate', name: 'In Progress' } });
      expect(f.issuetype).toMatchObject({ name: 'Bug', subtask: false, hierarchyLevel: 0 });
      expect(f.priority).toMatchObject({ name: 'Highest', id: '1' });
      expect(f.project).toMatchObject({ key: 'DEMO', name: 'Demo Project', projectTypeKey: 'software' });
      expect(f.labels).toEqual(['auth', 'customer-reported']);
      expect(f.components.map((c: { name: string }) => c.name)).toEqual(['Backend']);
      expect(f.description).toEqual(sim.issue('DEMO-3')!.description);
      expect(f.created).toBe('2025-11-15T10:30:00.000+0000');
      expect(f.created).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}\+0000$/);
      expect(f.comment.total).toBe(2);
      expect(f.comment.comments[0].body).toEqual(adf('I can reproduce this on staging.'));
      // Carol hides her e-mail: the assignee object has no emailAddress at all.
      expect(f.assignee.accountId).toBe(carol.accountId);
      expect(f.assignee).not.toHaveProperty('emailAddress');
      expect(f.reporter.emailAddress).toBe(bob.email);
      expect(f).not.toHaveProperty('parent');
    });

    it('finds issues by id or by key in any case', async () => {
      expect((await call(sim, 'GET', '/rest/api/3/issue/demo-3')).json.key).toBe('DEMO-3');
      expect((await call(sim, 'GET', '/rest/api/3/issue/10002')).json.key).toBe('DEMO-3');
      const missing = await call(sim, 'GET', '/rest/api/3/issue/DEMO-999');
      expect(missing.status).toBe(404);
      expect(missing.json).toEqual({ errorMessages: ['Issue does not exist or you do not have permission to see it.'], errors: {} });
    });

    it('selects fields: comma lists, repeated params, *all, *navigable and exclusions', async () => {
      const some = await call(sim, 'GET', '/rest/api/3/issue/DEMO-3?fields=summary,status&fields=labels');
      expect(Object.keys(some.json.fields).sort()).toEqual(['labels', 'status', 'summary']);
      const navigable = await call(sim, 'GET', '/rest/api/3/issue/DEMO-3?fields=*navigable');
      expect(navigable.json.fields).toHaveProperty('summary');
      expect(navigable.json.fields).not.toHaveProperty('comment');
      const all = await call(sim, 'GET', '/rest/api/3/issue/DEMO-3?fields=*all,-description,-comment');
      expect(all.json.fields).toHaveProperty('environment');
      expect(all.json.fields).not.toHaveProperty('description');
      expect(all.json.fields).not.toHaveProperty('comment');
      const excludeOnly = await call(sim, 'GET', '/rest/api/3/issue/DEMO-3?fields=-description');
      expect(excludeOnly.json.fields).toHaveProperty('comment');
      expect(excludeOnly.json.fields).not.toHaveProperty('description');
    });

    it('shows parent and sub-tasks', async () => {
      const parent = await call(sim, 'GET', '/rest/api/3/issue/DEMO-5?fields=subtasks');
      expect(parent.json.fields.subtasks.map((s: { key: string }) => s.key)).toEqual(['DEMO-6', 'DEMO-7']);
      expect(parent.json.fields.subtasks[1].fields.status.name).toBe('Done');
      const child = await call(sim, 'GET', '/rest/api/3/issue/DEMO-6?fields=parent,issuetype');
      expect(child.json.fields.parent).toMatchObject({ key: 'DEMO-5', fields: { summary: 'Upgrade database driver' } });
      expect(child.json.fields.issuetype).toMatchObject({ name: 'Sub-task', subtask: true, hierarchyLevel: -1 });
    });

    it('expands names, transitions and renderedFields', async () => {
      const r = await call(sim, 'GET', '/rest/api/3/issue/DEMO-1?fields=summary&expand=names,transitions,renderedFields');
      expect(r.json.names).toEqual({ summary: 'Summary' });
      expect(r.json.transitions.map((t: { name: string }) => t.name)).toEqual(['Stop progress', 'Mark as done']);
      expect(r.json.renderedFields.description).toBe('<p>Rebuild the checkout flow end to end.</p>');
    });
  });

  describe('transitions list', () => {
    it('names transitions differently from their target status and leaves out the current status', async () => {
      const r = await call(sim, 'GET', '/rest/api/3/issue/DEMO-2/transitions');
      expect(r.json.expand).toBe('transitions');
      expect(r.json.transitions.map((t: any) => [t.id, t.name, t.to.name, t.to.statusCategory.key])).toEqual([
        ['11', 'Start progress', 'In Progress', 'indeterminate'],
        ['31', 'Mark as done', 'Done', 'done'],
      ]);
      expect(r.json.transitions[0]).toMatchObject({ hasScreen: false, isGlobal: false, isAvailable: true });
      expect(r.json.transitions[0]).not.toHaveProperty('fields');
    });

    it('shows the transition screen fields only with expand=transitions.fields', async () => {
      const r = await call(sim, 'GET', '/rest/api/3/issue/OPS-1/transitions?expand=transitions.fields&transitionId=71');
      expect(r.json.transitions).toHaveLength(1);
      expect(r.json.transitions[0]).toMatchObject({ id: '71', name: 'Resolve this issue', hasScreen: true, to: { name: 'Resolved' } });
      expect(r.json.transitions[0].fields.resolution).toMatchObject({ required: true });
    });
  });

  describe('removed search', () => {
    const body = {
      errorMessages: [
        'The requested API has been removed. Please migrate to the /rest/api/3/search/jql API. A full migration guideline is available at https://developer.atlassian.com/changelog/#CHANGE-2046',
      ],
      errors: {},
    };
    it.each([
      ['GET', '/rest/api/3/search?jql=project%3DDEMO'],
      ['POST', '/rest/api/3/search'],
      ['GET', '/rest/api/2/search?jql=project%3DDEMO'],
    ])('%s %s answers 410', async (method, path) => {
      const r = await call(sim, method, path, method === 'POST' ? { body: { jql: 'project = DEMO' } } : {});
      expect(r.status).toBe(410);
      expect(r.json).toEqual(body);
    });
  });

  describe('search/jql', () => {
    it('returns only ids by default, with isLast and without total', async () => {
      const r = await call(sim, 'GET', jql('project = OPS ORDER BY key ASC'));
      expect(r.status).toBe(200);
      expect(r.json).toEqual({ issues: [{ id: '10008' }, { id: '10009' }, { id: '10010' }], isLast: true });
    });

    it('returns the requested fields and top-level names', async () => {
      const r = await call(sim, 'GET', jql('key = DEMO-3', '&fields=summary,status&expand=names'));
      expect(r.json.issues[0]).toMatchObject({ id: '10002', key: 'DEMO-3', self: `${sim.url}/rest/api/3/issue/10002` });
      expect(Object.keys(r.json.issues[0].fields).sort()).toEqual(['status', 'summary']);
      expect(r.json.names).toEqual({ summary: 'Summary', status: 'Status' });
    });

    it('accepts POST with the same fields and rejects unknown keys such as startAt', async () => {
      const ok = await call(sim, 'POST', '/rest/api/3/search/jql', { body: { jql: 'project = MKT', fields: ['summary'], maxResults: 10 } });
      expect(ok.status).toBe(200);
      expect(ok.json.issues[0].fields).toEqual({ summary: 'Plan launch webinar' });
      const startAt = await call(sim, 'POST', '/rest/api/3/search/jql', { body: { jql: 'project = MKT', startAt: 0 } });
      expect(startAt.status).toBe(400);
      expect(startAt.json).toEqual({ errorMessages: ['Invalid request payload. Refer to the REST API documentation and try again.'] });
      const badType = await call(sim, 'POST', '/rest/api/3/search/jql', { body: { jql: 'project = MKT', fields: 'summary' } });
      expect(badType.status).toBe(400);
    });

    it('rejects unbounded queries', async () => {
      const body = { errorMessages: ['Unbounded JQL queries are not allowed here. Please add a search restriction to your query.'], errors: {} };
      for (const q of ['', 'ORDER BY created DESC', '  ']) {
        const r = await call(sim, 'GET', jql(q));
        expect(r.status, q).toBe(400);
        expect(r.json).toEqual(body);
      }
      const post = await call(sim, 'POST', '/rest/api/3/search/jql', { body: {} });
      expect(post.json).toEqual(body);
    });

    it('reports unknown projects, fields, values, functions and operators', async () => {
      expect(await jqlError(sim, 'project = XYZ')).toEqual(["The value 'XYZ' does not exist for the field 'project'."]);
      expect(await jqlError(sim, 'project in (DEMO, NOPE) AND status = Nowhere')).toEqual([
        "The value 'NOPE' does not exist for the field 'project'.",
        "The value 'Nowhere' does not exist for the field 'status'.",
      ]);
      expect(await jqlError(sim, 'colour = red')).toEqual(["Field 'colour' does not exist or you do not have permission to view it."]);
      expect(await jqlError(sim, 'assignee = whoAmI()')).toEqual(["Unable to find JQL function 'whoAmI()'."]);
      expect(await jqlError(sim, 'project ~ DEMO')).toEqual(["The operator '~' is not supported by the 'project' field."]);
      expect(await jqlError(sim, 'summary = Login')).toEqual(["The operator '=' is not supported by the 'summary' field."]);
      expect(await jqlError(sim, 'created > yesterday')).toEqual([
        "Date value 'yesterday' for field 'created' is invalid. Valid formats include: 'yyyy/MM/dd HH:mm', 'yyyy-MM-dd HH:mm', 'yyyy/MM/dd', 'yyyy-MM-dd', or a period format e.g. '-5d', '4w 2d'.",
      ]);
      expect(await jqlError(sim, 'key = DEMO-999')).toEqual(["An issue with key 'DEMO-999' does not exist for field 'key'."]);
      expect(await jqlError(sim, 'project = DEMO ORDER BY description')).toEqual(["Not able to sort using field 'description'."]);
    });

    it('reports parse errors with their position', async () => {
      expect(await jqlError(sim, 'project = DEMO AND')).toEqual(['Error in the JQL Query: Expecting a field name before the end of the query.']);
      expect(await jqlError(sim, 'project DEMO')).toEqual([
        "Error in the JQL Query: Expecting operator but got 'DEMO'. The valid operators are '=', '!=', '<', '>', '<=', '>=', '~', '!~', 'IN', 'NOT IN', 'IS' and 'IS NOT'. (line 1, character 9)",
      ]);
      expect(await jqlError(sim, 'summary ~ "unfinished')).toEqual([
        "Error in the JQL Query: The quoted string 'unfinished' has not been completed. (line 1, character 11)",
      ]);
      expect(await jqlError(sim, '(project = DEMO')).toEqual(["Error in the JQL Query: Expecting ')' before the end of the query."]);
      expect(await jqlError(sim, 'project = DEMO status = Done')).toEqual([
        "Error in the JQL Query: Expecting either 'OR' or 'AND' but got 'status'. (line 1, character 16)",
      ]);
      expect(await jqlError(sim, 'project = AND')).toEqual([
        "Error in the JQL Query: Expecting either a value, list or function but got 'AND'. You must surround 'AND' in quotation marks to use it as a value. (line 1, character 11)",
      ]);
      expect(await jqlError(sim, 'labels = a%b')).toEqual([
        "Error in the JQL Query: The character '%' is a reserved JQL character. You must enclose it in a string or use the escape '\\u0025' instead. (line 1, character 11)",
      ]);
    });

    it('evaluates equality, lists, emptiness and negation like Jira', async () => {
      expect(await keys(sim, 'project = DEMO AND status = "In Progress" ORDER BY key')).toEqual(['DEMO-1', 'DEMO-3']);
      expect(await keys(sim, "project = demo AND status = 'to do' ORDER BY key")).toEqual(['DEMO-2', 'DEMO-5', 'DEMO-6', 'DEMO-8']);
      expect(await keys(sim, 'project = DEMO AND status != Done ORDER BY key')).toEqual(['DEMO-1', 'DEMO-2', 'DEMO-3', 'DEMO-5', 'DEMO-6', 'DEMO-8']);
      expect(await keys(sim, 'project = DEMO AND type IN (Bug, Epic) ORDER BY key')).toEqual(['DEMO-1', 'DEMO-3', 'DEMO-8']);
      expect(await keys(sim, 'project = DEMO AND issuetype NOT IN (Bug, Task, "Sub-task") ORDER BY key')).toEqual(['DEMO-1', 'DEMO-2']);
      expect(await keys(sim, 'project = DEMO AND assignee IS EMPTY ORDER BY key')).toEqual(['DEMO-5', 'DEMO-8']);
      // != never matches an empty field.
      expect(await keys(sim, `project = DEMO AND assignee != "${alice.accountId}" ORDER BY key`)).toEqual(['DEMO-2', 'DEMO-3', 'DEMO-6']);
      expect(await keys(sim, 'project = DEMO AND labels IS NOT EMPTY ORDER BY key')).toEqual(['DEMO-1', 'DEMO-2', 'DEMO-3']);
      expect(await keys(sim, 'labels = frontend ORDER BY key')).toEqual(['DEMO-1', 'DEMO-2']);
      expect(await keys(sim, 'labels in (ux, outage) ORDER BY key')).toEqual(['DEMO-2', 'OPS-2']);
      expect(await keys(sim, 'project = DEMO AND labels NOT IN (ux) ORDER BY key')).toEqual(['DEMO-1', 'DEMO-3']);
      expect(await keys(sim, 'statusCategory = Done ORDER BY key')).toEqual(['DEMO-4', 'DEMO-7', 'OPS-3']);
      expect(await keys(sim, 'statusCategory = indeterminate AND project = OPS')).toEqual(['OPS-2']);
      expect(await keys(sim, 'parent = DEMO-5 ORDER BY key')).toEqual(['DEMO-6', 'DEMO-7']);
      expect(await keys(sim, 'parent = DEMO-1')).toEqual(['DEMO-2']);
      expect(await keys(sim, 'project = MKT AND sprint IS EMPTY')).toEqual(['MKT-1']);
      expect(await keys(sim, 'sprint in openSprints()')).toEqual([]);
      expect(await keys(sim, 'component = Backend ORDER BY key')).toEqual(['DEMO-3', 'DEMO-5']);
      expect(await keys(sim, 'fixVersion = "1.0"')).toEqual(['DEMO-4']);
      expect(await keys(sim, 'resolution = Unresolved AND project = OPS ORDER BY key')).toEqual(['OPS-1', 'OPS-2']);
      expect(await keys(sim, `reporter = "${bob.email}"`)).toEqual(['DEMO-3']);
      expect(await keys(sim, 'assignee = "Carol Quiet"')).toEqual(['DEMO-3']);
    });

    it('binds AND tighter than OR, honours parentheses and NOT', async () => {
      expect(await keys(sim, 'project = OPS OR project = DEMO AND priority = Highest ORDER BY key')).toEqual(['DEMO-3', 'OPS-1', 'OPS-2', 'OPS-3']);
      expect(await keys(sim, '(project = OPS OR project = DEMO) AND priority = Highest ORDER BY key')).toEqual(['DEMO-3', 'OPS-2']);
      expect(await keys(sim, 'project = OPS AND NOT status = Resolved ORDER BY key')).toEqual(['OPS-1', 'OPS-2']);
      expect(await keys(sim, 'project = OPS && (status = Resolved || priority = Highest) ORDER BY key')).toEqual(['OPS-2', 'OPS-3']);
    });

    it('compares priorities, keys and dates', async () => {
      expect(await keys(sim, 'project = DEMO AND priority > Medium ORDER BY key')).toEqual(['DEMO-1', 'DEMO-2', 'DEMO-3']);
      expect(await keys(sim, 'project = DEMO AND priority <= Low ORDER BY key')).toEqual(['DEMO-5', 'DEMO-8']);
      expect(await keys(sim, 'key > DEMO-5 ORDER BY key')).toEqual(['DEMO-6', 'DEMO-7', 'DEMO-8']);
      expect(await keys(sim, 'key in (DEMO-1, ops-2) ORDER BY key')).toEqual(['DEMO-1', 'OPS-2']);
      expect(await keys(sim, 'created >= "2025-11-18" ORDER BY key')).toEqual(['DEMO-6', 'DEMO-7', 'DEMO-8', 'OPS-1', 'OPS-2']);
      expect(await keys(sim, 'created < "2025/10/20 12:00" ORDER BY key')).toEqual(['DEMO-1']);
    });

    it('understands relative dates -30m, -24h, -7d and -2w', async () => {
      expect(await keys(sim, 'created >= -30m')).toEqual([]);
      expect(await keys(sim, 'created >= -24h ORDER BY key')).toEqual(['DEMO-8', 'OPS-1']);
      expect(await keys(sim, 'project = DEMO AND created >= -7d ORDER BY key')).toEqual(['DEMO-3', 'DEMO-5', 'DEMO-6', 'DEMO-7', 'DEMO-8']);
      expect(await keys(sim, 'project = DEMO AND created > -2w AND created < -4d ORDER BY key')).toEqual(['DEMO-3']);
      expect(await keys(sim, 'project = DEMO AND created >= "-1w 2d" AND created <= -3d ORDER BY key')).toEqual(['DEMO-3', 'DEMO-5']);
    });

    it('evaluates now(), startOfDay(), endOfDay(), startOfWeek() and startOfMonth() with offsets', async () => {
      // Today is 2025-11-20 (Thursday); the week starts on Sunday 2025-11-16.
      expect(await keys(sim, 'created >= startOfDay() ORDER BY key')).toEqual(['DEMO-8', 'OPS-1']);
      expect(await keys(sim, 'updated >= startOfDay(-1) AND updated < startOfDay() ORDER BY key')).toEqual(['DEMO-3', 'DEMO-7']);
      expect(await keys(sim, 'updated >= startOfDay("-1d") AND updated < startOfDay() ORDER BY key')).toEqual(['DEMO-3', 'DEMO-7']);
      expect(await keys(sim, 'duedate <= endOfDay() ORDER BY key')).toEqual(['DEMO-3']);
      expect(await keys(sim, 'duedate > now()')).toEqual(['DEMO-2']);
      // DEMO-3 was created on Saturday, before the week started.
      expect(await keys(sim, 'project = DEMO AND created >= startOfWeek() ORDER BY key')).toEqual(['DEMO-5', 'DEMO-6', 'DEMO-7', 'DEMO-8']);
      expect(await keys(sim, 'created < startOfMonth() ORDER BY key')).toEqual(['DEMO-1', 'DEMO-2', 'DEMO-4']);
      expect(await keys(sim, 'created >= startOfMonth(-1) AND created <= endOfMonth("-1M") ORDER BY key')).toEqual(['DEMO-1', 'DEMO-2', 'DEMO-4']);
      expect(await keys(sim, 'created < startOfMonth(-1)')).toEqual([]);
      expect(await keys(sim, 'resolved >= startOfWeek(-1w) ORDER BY key')).toEqual(['DEMO-4', 'DEMO-7', 'OPS-3']);
    });

    it('resolves currentUser() to the caller', async () => {
      expect(await keys(sim, 'assignee = currentUser() ORDER BY key')).toEqual(['DEMO-1', 'DEMO-4', 'DEMO-7', 'MKT-1', 'SEC-1']);
      const b = sim.credentialsFor(bob.email)!;
      expect(await keys(sim, 'assignee = currentUser() ORDER BY key', sim.authHeader(b.email, b.apiToken))).toEqual(['DEMO-2', 'DEMO-6', 'OPS-2']);
      expect(await keys(sim, 'reporter = currentUser() AND project = OPS ORDER BY key')).toEqual(['OPS-2', 'OPS-3']);
    });

    it('searches text with ~ and !~', async () => {
      expect(await keys(sim, 'summary ~ login')).toEqual(['DEMO-3']);
      expect(await keys(sim, 'summary ~ "upgrade driver"')).toEqual(['DEMO-5']);
      expect(await keys(sim, 'summary ~ "\\"driver upgrade\\""')).toEqual([]);
      expect(await keys(sim, 'summary ~ "\\"database driver\\""')).toEqual(['DEMO-5']);
      expect(await keys(sim, 'summary ~ "redes*"')).toEqual(['DEMO-2']);
      expect(await keys(sim, 'description ~ shipping')).toEqual(['DEMO-2']);
      expect(await keys(sim, 'text ~ staging')).toEqual(['DEMO-3']);
      expect(await keys(sim, 'comment ~ "audience"')).toEqual(['DEMO-3']);
      expect(await keys(sim, 'project = OPS AND summary !~ mail ORDER BY key')).toEqual(['OPS-1', 'OPS-3']);
      expect(await keys(sim, 'project = DEMO AND description IS EMPTY ORDER BY key')).toEqual(['DEMO-4', 'DEMO-6', 'DEMO-7', 'DEMO-8']);
    });

    it('orders by several keys, ascending and descending', async () => {
      expect(await keys(sim, 'project = DEMO ORDER BY priority DESC, key ASC')).toEqual([
        'DEMO-3',
        'DEMO-1',
        'DEMO-2',
        'DEMO-4',
        'DEMO-6',
        'DEMO-7',
        'DEMO-5',
        'DEMO-8',
      ]);
      expect(await keys(sim, 'project = DEMO ORDER BY created DESC')).toEqual(['DEMO-8', 'DEMO-7', 'DEMO-6', 'DEMO-5', 'DEMO-3', 'DEMO-2', 'DEMO-4', 'DEMO-1']);
      expect(await keys(sim, 'project = DEMO ORDER BY duedate ASC, key DESC')).toEqual([
        'DEMO-3',
        'DEMO-2',
        'DEMO-8',
        'DEMO-7',
        'DEMO-6',
        'DEMO-5',
        'DEMO-4',
        'DEMO-1',
      ]);
      expect(await keys(sim, 'project = DEMO AND assignee IS NOT EMPTY ORDER BY assignee, key')).toEqual([
        'DEMO-1',
        'DEMO-4',
        'DEMO-7',
        'DEMO-2',
        'DEMO-6',
        'DEMO-3',
      ]);
      expect(await keys(sim, 'project in (DEMO, OPS) AND statusCategory = done ORDER BY project DESC, status')).toEqual(['OPS-3', 'DEMO-7', 'DEMO-4']);
    });

    it('counts approximately with bounded JQL only', async () => {
      const ok = await call(sim, 'POST', '/rest/api/3/search/approximate-count', { body: { jql: 'project = DEMO' } });
      expect(ok.status).toBe(200);
      expect(ok.json).toEqual({ count: 8 });
      const unbounded = await call(sim, 'POST', '/rest/api/3/search/approximate-count', { body: { jql: 'order by key' } });
      expect(unbounded.status).toBe(400);
      const broken = await call(sim, 'POST', '/rest/api/3/search/approximate-count', { body: { jql: 'project =' } });
      expect(broken.status).toBe(400);
      expect(broken.json.errorMessages[0]).toMatch(/^Error in the JQL Query/);
    });
  });

  describe('projects', () => {
    it('lists projects as an offset page bean ordered by key', async () => {
      const r = await call(sim, 'GET', '/rest/api/3/project/search');
      expect(r.status).toBe(200);
      expect(r.json).toMatchObject({ startAt: 0, maxResults: 50, total: 4, isLast: true, self: `${sim.url}/rest/api/3/project/search` });
      expect(r.json).not.toHaveProperty('nextPage');
      expect(r.json.values.map((p: any) => [p.key, p.projectTypeKey])).toEqual([
        ['DEMO', 'software'],
        ['MKT', 'business'],
        ['OPS', 'service_desk'],
        ['SEC', 'software'],
      ]);
      expect(r.json.values[0]).toMatchObject({ id: '10000', name: 'Demo Project', self: `${sim.url}/rest/api/3/project/10000`, style: 'classic' });
      expect(r.json.values[0]).not.toHaveProperty('description');
      expect(r.json.values[0]).not.toHaveProperty('lead');
    });

    it('pages with startAt/maxResults and clamps maxResults to 100', async () => {
      const first = await call(sim, 'GET', '/rest/api/3/project/search?maxResults=3');
      expect(first.json).toMatchObject({ startAt: 0, maxResults: 3, total: 4, isLast: false });
      expect(first.json.values).toHaveLength(3);
      const next = await call(sim, 'GET', new URL(first.json.nextPage).pathname + new URL(first.json.nextPage).search);
      expect(next.json).toMatchObject({ startAt: 3, isLast: true });
      expect(next.json.values.map((p: any) => p.key)).toEqual(['SEC']);
      const clamped = await call(sim, 'GET', '/rest/api/3/project/search?maxResults=500');
      expect(clamped.json.maxResults).toBe(100);
    });

    it('expands description, lead, issueTypes and url, and filters by query, type and order', async () => {
      const r = await call(sim, 'GET', '/rest/api/3/project/search?query=ops&expand=description,lead,issueTypes,url');
      expect(r.json.total).toBe(1);
      const ops = r.json.values[0];
      expect(ops).toMatchObject({
        key: 'OPS',
        description: 'Service desk for internal IT requests.',
        lead: { accountId: bob.accountId },
        url: `${sim.url}/browse/OPS`,
      });
      expect(ops.issueTypes.map((t: any) => t.name)).toEqual(['Service Request', 'Incident', 'Task', 'Sub-task']);
      const byName = await call(sim, 'GET', '/rest/api/3/project/search?query=demo%20proj');
      expect(byName.json.values.map((p: any) => p.key)).toEqual(['DEMO']);
      const software = await call(sim, 'GET', '/rest/api/3/project/search?typeKey=software&orderBy=-key');
      expect(software.json.values.map((p: any) => p.key)).toEqual(['SEC', 'DEMO']);
      const byNameOrder = await call(sim, 'GET', '/rest/api/3/project/search?orderBy=name');
      expect(byNameOrder.json.values.map((p: any) => p.name)).toEqual(['Demo Project', 'IT Operations', 'Marketing', 'Security']);
    });

    it('shows other users only the projects they may browse', async () => {
      const b = sim.credentialsFor(bob.email)!;
      const r = await call(sim, 'GET', '/rest/api/3/project/search', { auth: sim.authHeader(b.email, b.apiToken) });
      expect(r.json.values.map((p: any) => p.key)).toEqual(['DEMO', 'MKT', 'OPS']);
    });
  });

  describe('create metadata', () => {
    it('lists issue types under the Cloud key issueTypes', async () => {
      const r = await call(sim, 'GET', '/rest/api/3/issue/createmeta/DEMO/issuetypes');
      expect(r.status).toBe(200);
      expect(r.json).not.toHaveProperty('values');
      expect(r.json).toMatchObject({ startAt: 0, maxResults: 50, total: 5 });
      expect(r.json.issueTypes.map((t: any) => [t.name, t.subtask])).toEqual([
        ['Task', false],
        ['Bug', false],
        ['Story', false],
        ['Epic', false],
        ['Sub-task', true],
      ]);
      const paged = await call(sim, 'GET', '/rest/api/3/issue/createmeta/10000/issuetypes?startAt=4&maxResults=2');
      expect(paged.json.issueTypes.map((t: any) => t.name)).toEqual(['Sub-task']);
    });

    it('rejects maxResults above 200 and unknown projects', async () => {
      const big = await call(sim, 'GET', '/rest/api/3/issue/createmeta/DEMO/issuetypes?maxResults=201');
      expect(big.status).toBe(400);
      expect(big.json).toEqual({ errorMessages: ["Parameter 'maxResults' must not exceed the limit '200'"], errors: {} });
      // The OpenAPI of getCreateIssueMetaIssueTypes documents 200, 400 and 401 only.
      const missing = await call(sim, 'GET', '/rest/api/3/issue/createmeta/NOPE/issuetypes');
      expect(missing.status).toBe(400);
      const none = await call(sim, 'GET', '/rest/api/3/project/search?query=no-such-project');
      expect(none.status).toBe(404);
    });

    it('describes the fields of one issue type, with the project-specific required ones', async () => {
      const r = await call(sim, 'GET', '/rest/api/3/issue/createmeta/OPS/issuetypes/10006');
      const byId = Object.fromEntries(r.json.fields.map((f: any) => [f.fieldId, f]));
      expect(byId.summary.required).toBe(true);
      expect(byId.priority.required).toBe(true);
      expect(byId).not.toHaveProperty('fixVersions');
      expect(byId.components.allowedValues.map((c: any) => c.name)).toEqual(['Network', 'Email']);
    });
  });

  describe('user search', () => {
    it('returns a bare array, matching display-name and e-mail prefixes', async () => {
      const byName = await call(sim, 'GET', '/rest/api/3/user/search?query=bob');
      expect(Array.isArray(byName.json)).toBe(true);
      expect(byName.json.map((u: any) => u.accountId)).toEqual([bob.accountId]);
      const byEmail = await call(sim, 'GET', `/rest/api/3/user/search?query=${encodeURIComponent('alice@exa')}`);
      expect(byEmail.json).toEqual([
        expect.objectContaining({ accountId: alice.accountId, emailAddress: alice.email, accountType: 'atlassian', active: true }),
      ]);
      const lastName = await call(sim, 'GET', '/rest/api/3/user/search?query=quiet');
      expect(lastName.json.map((u: any) => u.displayName)).toEqual(['Carol Quiet']);
    });

    it('does not match or show hidden e-mails', async () => {
      const hidden = await call(sim, 'GET', `/rest/api/3/user/search?query=${encodeURIComponent(carol.email)}`);
      expect(hidden.json).toEqual([]);
      const byName = await call(sim, 'GET', '/rest/api/3/user/search?query=carol');
      expect(byName.json).toHaveLength(1);
      expect(byName.json[0]).not.toHaveProperty('emailAddress');
    });

    it('lists app and inactive accounts as such, and finds by accountId', async () => {
      const app = await call(sim, 'GET', '/rest/api/3/user/search?query=automation');
      expect(app.json[0]).toMatchObject({ accountType: 'app', displayName: 'Automation for Jira' });
      const inactive = await call(sim, 'GET', '/rest/api/3/user/search?query=dave');
      expect(inactive.json[0].active).toBe(false);
      const exact = await call(sim, 'GET', `/rest/api/3/user/search?accountId=${encodeURIComponent(bob.accountId)}`);
      expect(exact.json.map((u: any) => u.displayName)).toEqual(['Bob Builder']);
    });

    it('rejects the GDPR-removed username parameter', async () => {
      const r = await call(sim, 'GET', '/rest/api/3/user/search?username=bob');
      expect(r.status).toBe(400);
      expect(r.json).toEqual({ errorMessages: ["The query parameter 'username' is not supported in GDPR strict mode."], errors: {} });
    });
  });
});

describe('Jira sandbox: writes', () => {
  let sim: JiraSandbox;
  beforeEach(async () => {
    sim = await startJiraSandbox({ now: () => NOW });
  });
  afterEach(() => sim.close());

  const create = (fields: Record<string, unknown>, extra: Record<string, unknown> = {}) =>
    call(sim, 'POST', '/rest/api/3/issue', {
      body: { fields: { project: { key: 'DEMO' }, issuetype: { name: 'Task' }, summary: 'A task', ...fields }, ...extra },
    });

  describe('create issue', () => {
    it('answers 201 {id,key,self} and stores the ADF description', async () => {
      const r = await create({
        summary: 'Add dark mode',
        description: adf('Please.'),
        labels: ['ui', 'theme'],
        priority: { name: 'High' },
        assignee: { accountId: bob.accountId },
        components: [{ name: 'Frontend' }, { id: '10002' }],
        fixVersions: [{ name: '1.1' }],
        duedate: '2025-12-01',
      });
      expect(r.status).toBe(201);
      expect(r.json).toEqual({ id: '10013', key: 'DEMO-9', self: `${sim.url}/rest/api/3/issue/10013` });
      expect(sim.issue('DEMO-9')).toMatchObject({
        summary: 'Add dark mode',
        description: adf('Please.'),
        status: 'To Do',
        statusCategory: 'new',
        priority: 'High',
        assignee: bob.accountId,
        reporter: alice.accountId,
        labels: ['ui', 'theme'],
        components: ['Frontend', 'API'],
        fixVersions: ['1.1'],
        duedate: '2025-12-01',
        created: '2025-11-20T10:30:00.000+0000',
      });
      const got = await call(sim, 'GET', '/rest/api/3/issue/DEMO-9?fields=summary,assignee');
      expect(got.json.fields.assignee.displayName).toBe('Bob Builder');
    });

    it('accepts the assignee as {id} and rejects {name}', async () => {
      expect((await create({ assignee: { id: bob.accountId } })).status).toBe(201);
      const byName = await create({ assignee: { name: 'bob' } });
      expect(byName.status).toBe(400);
      expect(byName.json).toEqual({ errorMessages: [], errors: { assignee: 'Specify a valid value for assignee' } });
    });

    it('requires ADF for the description', async () => {
      const r = await create({ description: 'plain text' });
      expect(r.status).toBe(400);
      expect(r.json).toEqual({
        errorMessages: [],
        errors: { description: 'Operation value must be an Atlassian Document (see the Atlassian Document Format)' },
      });
      const emptyText = await create({ description: { type: 'doc', version: 1, content: [{ type: 'paragraph', content: [{ type: 'text', text: '' }] }] } });
      expect(emptyText.status).toBe(400);
      expect(emptyText.json.errorMessages).toEqual(['INVALID_INPUT']);
    });

    it('rejects labels with spaces, missing summary, unknown project and issue type', async () => {
      expect((await create({ labels: ['ok', 'a b'] })).json).toEqual({
        errorMessages: [],
        errors: { labels: "The label 'a b' contains spaces which is invalid." },
      });
      const noSummary = await call(sim, 'POST', '/rest/api/3/issue', { body: { fields: { project: { key: 'DEMO' }, issuetype: { name: 'Task' } } } });
      expect(noSummary.status).toBe(400);
      expect(noSummary.json).toEqual({ errorMessages: [], errors: { summary: 'You must specify a summary of the issue.' } });
      expect((await create({ project: { key: 'NOPE' } })).json).toEqual({ errorMessages: [], errors: { project: 'Specify a valid project ID or key' } });
      expect((await create({ project: { id: '10001' }, issuetype: { name: 'Story' } })).json.errors).toEqual({ issuetype: 'Specify a valid issue type' });
      expect((await create({ issuetype: undefined })).json.errors).toEqual({ issuetype: 'Specify an issue type' });
      expect(sim.issueKeys('DEMO')).toHaveLength(8);
    });

    it('collects several field errors in one answer', async () => {
      const r = await create({ summary: '', labels: ['x y'], components: [{ name: 'Mobile' }], fixVersions: [{ id: '999' }] });
      expect(r.status).toBe(400);
      expect(r.json.errors).toEqual({
        summary: 'You must specify a summary of the issue.',
        labels: "The label 'x y' contains spaces which is invalid.",
        components: "Component name 'Mobile' is not valid",
        fixVersions: "Version id '999' is not valid",
      });
    });

    it('rejects fields that are not on the screen and reports project-required fields', async () => {
      const custom = await create({ customfield_12345: 'x' });
      expect(custom.json).toEqual({
        errorMessages: [],
        errors: { customfield_12345: "Field 'customfield_12345' cannot be set. It is not on the appropriate screen, or unknown." },
      });
      const status = await create({ status: { name: 'Done' } });
      expect(status.json.errors.status).toBe("Field 'status' cannot be set. It is not on the appropriate screen, or unknown.");
      const opsVersions = await create({ project: { key: 'OPS' }, issuetype: { name: 'Incident' }, priority: { name: 'High' }, fixVersions: [] });
      expect(opsVersions.json.errors).toEqual({ fixVersions: "Field 'fixVersions' cannot be set. It is not on the appropriate screen, or unknown." });
      const noPriority = await create({ project: { key: 'OPS' }, issuetype: { name: 'Incident' } });
      expect(noPriority.status).toBe(400);
      expect(noPriority.json).toEqual({ errorMessages: ["Field 'priority' is required"], errors: {} });
      const ok = await create({ project: { key: 'OPS' }, issuetype: { name: 'Incident' }, priority: { id: '2' } });
      expect(ok.json.key).toBe('OPS-4');
      expect(sim.issue('OPS-4')!.status).toBe('Waiting for support');
    });

    it('needs a parent for sub-tasks and checks the hierarchy', async () => {
      const orphan = await create({ issuetype: { name: 'Sub-task' } });
      expect(orphan.json.errors).toEqual({ parent: 'Issue type is a sub-task but parent issue key or id not specified.' });
      const child = await create({ issuetype: { name: 'Sub-task' }, parent: { key: 'DEMO-2' } });
      expect(child.status).toBe(201);
      expect(sim.issue('DEMO-2')!.subtasks).toEqual([child.json.key]);
      const underSubtask = await create({ issuetype: { name: 'Sub-task' }, parent: { key: 'DEMO-6' } });
      expect(underSubtask.json.errors.parent).toBe('Given parent work item does not belong to appropriate hierarchy.');
      const storyUnderEpic = await create({ issuetype: { name: 'Story' }, parent: { id: '10000' } });
      expect(sim.issue(storyUnderEpic.json.key)!.parent).toBe('DEMO-1');
      const missing = await create({ issuetype: { name: 'Sub-task' }, parent: { key: 'DEMO-404' } });
      expect(missing.json.errors.parent).toBe('Could not find issue by id or key.');
    });
  });

  describe('edit issue', () => {
    it('answers 204 with an empty body and applies fields and update operations', async () => {
      const r = await call(sim, 'PUT', '/rest/api/3/issue/DEMO-2', {
        body: { fields: { summary: 'Cart page v2', description: adf('New text') }, update: { labels: [{ add: 'checkout' }, { remove: 'ux' }] } },
      });
      expect(r.status).toBe(204);
      expect(r.text).toBe('');
      expect(sim.issue('DEMO-2')).toMatchObject({ summary: 'Cart page v2', description: adf('New text'), labels: ['frontend', 'checkout'] });
      const changelog = await call(sim, 'GET', '/rest/api/3/issue/DEMO-2?fields=summary&expand=changelog');
      expect(changelog.json.changelog.histories[0].items).toContainEqual(
        expect.objectContaining({ field: 'summary', fromString: 'Redesign the cart page', toString: 'Cart page v2' }),
      );
    });

    it('never accepts a field in both fields and update', async () => {
      const r = await call(sim, 'PUT', '/rest/api/3/issue/DEMO-2', { body: { fields: { labels: ['a'] }, update: { labels: [{ add: 'b' }] } } });
      expect(r.status).toBe(400);
      expect(Object.keys(r.json.errors)).toEqual(['labels']);
      expect(sim.issue('DEMO-2')!.labels).toEqual(['frontend', 'ux']);
    });

    it('returns the issue with returnIssue=true, ignores transitions and rejects status', async () => {
      const r = await call(sim, 'PUT', '/rest/api/3/issue/DEMO-2?returnIssue=true', {
        body: { fields: { assignee: null }, transition: { id: '11' } },
      });
      expect(r.status).toBe(200);
      expect(r.json.key).toBe('DEMO-2');
      expect(r.json.fields.assignee).toBeNull();
      expect(sim.issue('DEMO-2')!.status).toBe('To Do');
      const status = await call(sim, 'PUT', '/rest/api/3/issue/DEMO-2', { body: { fields: { status: { name: 'Done' } } } });
      expect(status.status).toBe(400);
      expect(status.json.errors.status).toMatch(/cannot be set/);
      const missing = await call(sim, 'PUT', '/rest/api/3/issue/DEMO-404', { body: { fields: { summary: 'x' } } });
      expect(missing.status).toBe(404);
    });

    it('adds a comment and edits components through update', async () => {
      const r = await call(sim, 'PUT', '/rest/api/3/issue/DEMO-5', {
        body: { update: { comment: [{ add: { body: adf('via edit') } }], components: [{ add: { name: 'API' } }, { remove: { id: '10001' } }] } },
      });
      expect(r.status).toBe(204);
      expect(sim.issue('DEMO-5')).toMatchObject({
        components: ['API'],
        comments: [expect.objectContaining({ body: adf('via edit'), author: alice.accountId })],
      });
    });
  });

  describe('transitions', () => {
    it('moves the issue with 204 and records the resolution of done statuses', async () => {
      const start = await call(sim, 'POST', '/rest/api/3/issue/DEMO-2/transitions', { body: { transition: { id: '11' } } });
      expect(start.status).toBe(204);
      expect(start.text).toBe('');
      expect(sim.issue('DEMO-2')).toMatchObject({ status: 'In Progress', statusCategory: 'indeterminate', resolution: null });
      await call(sim, 'POST', '/rest/api/3/issue/DEMO-2/transitions', { body: { transition: { id: 31 } } });
      expect(sim.issue('DEMO-2')).toMatchObject({ status: 'Done', resolution: 'Done' });
      expect(await keys(sim, 'statusCategory = done AND key = DEMO-2')).toEqual(['DEMO-2']);
    });

    it('rejects ids that are not available or not numbers', async () => {
      const done = await call(sim, 'POST', '/rest/api/3/issue/DEMO-4/transitions', { body: { transition: { id: '31' } } });
      expect(done.status).toBe(400);
      expect(done.json).toEqual({ errorMessages: ["Transition id '31' is not valid for this issue."], errors: {} });
      const named = await call(sim, 'POST', '/rest/api/3/issue/DEMO-4/transitions', { body: { transition: { id: 'Reopen' } } });
      expect(named.status).toBe(400);
      expect(named.json).toEqual({ errorMessages: ["'transition' identifier must be an integer"], errors: {} });
      const missing = await call(sim, 'POST', '/rest/api/3/issue/DEMO-404/transitions', { body: { transition: { id: '11' } } });
      expect(missing.status).toBe(404);
    });

    it('requires the transition screen fields and accepts a comment there', async () => {
      const bare = await call(sim, 'POST', '/rest/api/3/issue/OPS-1/transitions', { body: { transition: { id: '71' } } });
      expect(bare.status).toBe(400);
      expect(bare.json).toEqual({ errorMessages: [], errors: { resolution: 'Resolution is required.' } });
      const ok = await call(sim, 'POST', '/rest/api/3/issue/OPS-1/transitions', {
        body: { transition: { id: '71' }, fields: { resolution: { name: "Won't Do" } }, update: { comment: [{ add: { body: adf('Closing') } }] } },
      });
      expect(ok.status).toBe(204);
      expect(sim.issue('OPS-1')).toMatchObject({ status: 'Resolved', resolution: "Won't Do", comments: [expect.objectContaining({ body: adf('Closing') })] });
      const noScreen = await call(sim, 'POST', '/rest/api/3/issue/DEMO-2/transitions', {
        body: { transition: { id: '11' }, update: { comment: [{ add: { body: adf('x') } }] } },
      });
      expect(noScreen.json.errors.comment).toBe("Field 'comment' cannot be set. It is not on the appropriate screen, or unknown.");
    });
  });

  describe('comments', () => {
    it('answers 201 with the comment', async () => {
      const r = await call(sim, 'POST', '/rest/api/3/issue/demo-8/comment', { body: { body: adf('Fixed in main.') } });
      expect(r.status).toBe(201);
      expect(r.json).toMatchObject({
        id: expect.any(String),
        body: adf('Fixed in main.'),
        author: { accountId: alice.accountId, displayName: 'Alice Admin', active: true },
        created: '2025-11-20T10:30:00.000+0000',
        updated: '2025-11-20T10:30:00.000+0000',
      });
      expect(r.json.self).toBe(`${sim.url}/rest/api/3/issue/${sim.issue('DEMO-8')!.id}/comment/${r.json.id}`);
      expect(sim.issue('DEMO-8')!.comments.map((c) => c.body)).toEqual([adf('Fixed in main.')]);
    });

    it('requires an ADF body', async () => {
      const plain = await call(sim, 'POST', '/rest/api/3/issue/DEMO-8/comment', { body: { body: 'plain' } });
      expect(plain.status).toBe(400);
      expect(plain.json).toEqual({
        errorMessages: [],
        errors: { comment: 'Operation value must be an Atlassian Document (see the Atlassian Document Format)' },
      });
      const empty = await call(sim, 'POST', '/rest/api/3/issue/DEMO-8/comment', { body: {} });
      expect(empty.json.errors.comment).toBe('Comment body can not be empty!');
      expect((await call(sim, 'POST', '/rest/api/3/issue/DEMO-404/comment', { body: { body: adf('x') } })).status).toBe(404);
    });
  });

  describe('delete issue', () => {
    it('refuses an issue with sub-tasks unless deleteSubtasks=true', async () => {
      const refused = await call(sim, 'DELETE', '/rest/api/3/issue/DEMO-5');
      expect(refused.status).toBe(400);
      expect(refused.json).toEqual({
        errorMessages: ["The issue 'DEMO-5' has subtasks.  You must specify the 'deleteSubtasks' parameter to delete this issue and all its subtasks."],
        errors: {},
      });
      expect((await call(sim, 'DELETE', '/rest/api/3/issue/DEMO-5?deleteSubtasks=false')).status).toBe(400);
      const deleted = await call(sim, 'DELETE', '/rest/api/3/issue/DEMO-5?deleteSubtasks=true');
      expect(deleted.status).toBe(204);
      expect(deleted.text).toBe('');
      for (const key of ['DEMO-5', 'DEMO-6', 'DEMO-7']) expect(sim.issue(key)).toBeUndefined();
      expect((await call(sim, 'GET', '/rest/api/3/issue/DEMO-5')).status).toBe(404);
    });

    it('deletes a plain issue', async () => {
      expect((await call(sim, 'DELETE', '/rest/api/3/issue/DEMO-8')).status).toBe(204);
      expect((await call(sim, 'DELETE', '/rest/api/3/issue/DEMO-8')).status).toBe(404);
    });
  });

  describe('search pagination', () => {
    it('walks all pages with opaque tokens; the last page has isLast and no token', async () => {
      const seeded = sim.seedIssues(120);
      expect(seeded).toHaveLength(120);
      const seen: string[] = [];
      const sizes: number[] = [];
      let token: string | undefined;
      let pages = 0;
      do {
        const body: Record<string, unknown> = { jql: 'labels = generated ORDER BY key ASC', fields: ['summary'] };
        if (token) body.nextPageToken = token;
        const r = await call(sim, 'POST', '/rest/api/3/search/jql', { body });
        expect(r.status).toBe(200);
        expect(r.json).not.toHaveProperty('total');
        expect(r.json).not.toHaveProperty('startAt');
        sizes.push(r.json.issues.length);
        seen.push(...r.json.issues.map((i: { key: string }) => i.key));
        token = r.json.nextPageToken;
        if (token) {
          expect(r.json.isLast).toBe(false);
          expect(token).not.toMatch(/^\d+$/);
        } else {
          expect(r.json.isLast).toBe(true);
          expect(r.json).not.toHaveProperty('nextPageToken');
        }
        pages++;
      } while (token && pages < 10);
      expect(sizes).toEqual([50, 50, 20]);
      expect(seen).toEqual(seeded);
    });

    it('pages with GET as well and rejects a token used for another query', async () => {
      sim.seedIssues(5);
      const first = await call(sim, 'GET', jql('labels = generated', '&maxResults=2&fields=key'));
      expect(first.json.issues).toHaveLength(2);
      const token = first.json.nextPageToken as string;
      const second = await call(sim, 'GET', jql('labels = generated', `&maxResults=2&fields=key&nextPageToken=${encodeURIComponent(token)}`));
      expect(second.json.issues).toHaveLength(2);
      expect(second.json.issues[0].key).not.toBe(first.json.issues[0].key);
      const other = await call(sim, 'GET', jql('project = DEMO', `&nextPageToken=${encodeURIComponent(token)}`));
      expect(other.status).toBe(400);
    });

    it('returns fewer than maxResults when many fields are requested', async () => {
      sim.seedIssues(150);
      const full = await call(sim, 'GET', jql('labels = generated', '&maxResults=500&fields=summary'));
      expect(full.json.issues).toHaveLength(100);
      expect(full.json.isLast).toBe(false);
      const idsOnly = await call(sim, 'GET', jql('labels = generated', '&maxResults=500'));
      expect(idsOnly.json.issues).toHaveLength(150);
      expect(idsOnly.json.isLast).toBe(true);
    });
  });

  describe('faults and recording', () => {
    it('answers scripted 429s with Retry-After, then serves normally', async () => {
      sim.rateLimit(7, 2, '/rest/api/3/search');
      for (let i = 0; i < 2; i++) {
        const limited = await call(sim, 'GET', jql('project = DEMO'));
        expect(limited.status).toBe(429);
        expect(limited.headers.get('retry-after')).toBe('7');
      }
      expect((await call(sim, 'GET', jql('project = DEMO'))).status).toBe(200);
      expect((await call(sim, 'GET', '/rest/api/3/myself')).status).toBe(200);
    });

    it('applies generic faults before authentication and records every request', async () => {
      sim.faults.push({ method: 'GET', pathPrefix: '/rest/api/3/issue/', status: 503, body: 'maintenance' });
      const down = await call(sim, 'GET', '/rest/api/3/issue/DEMO-1', { auth: null });
      expect(down.status).toBe(503);
      expect(down.text).toBe('maintenance');
      await call(sim, 'POST', '/rest/api/3/issue/DEMO-1/comment', { body: { body: adf('hello') } });
      const last = sim.requests.at(-1)!;
      expect(last).toMatchObject({ method: 'POST', path: '/rest/api/3/issue/DEMO-1/comment' });
      expect(JSON.parse(last.body)).toEqual({ body: adf('hello') });
      expect(last.headers.authorization).toBe(sim.authHeader());
      expect(sim.requests).toHaveLength(2);
    });

    it('answers unknown paths with 404 and wrong methods with 405', async () => {
      expect((await call(sim, 'GET', '/rest/api/3/nothing-here')).status).toBe(404);
      expect((await call(sim, 'PATCH', '/rest/api/3/issue/DEMO-1')).status).toBe(405);
    });
  });
});

describe('Jira sandbox: eventual consistency', () => {
  it('hides new issues from search until indexed, unless reconciled by id', async () => {
    let now = NOW;
    const sim = await startJiraSandbox({ now: () => now, searchLagMs: 5_000 });
    try {
      const created = await call(sim, 'POST', '/rest/api/3/issue', {
        body: { fields: { project: { key: 'MKT' }, issuetype: { name: 'Task' }, summary: 'Fresh' } },
      });
      expect(await keys(sim, 'project = MKT')).toEqual(['MKT-1']);
      const reconciled = await call(sim, 'POST', '/rest/api/3/search/jql', {
        body: { jql: 'project = MKT ORDER BY key', fields: ['key'], reconcileIssues: [Number(created.json.id)] },
      });
      expect(reconciled.json.issues.map((i: { key: string }) => i.key)).toEqual(['MKT-1', 'MKT-2']);
      expect((await call(sim, 'GET', '/rest/api/3/issue/MKT-2')).status).toBe(200);
      now += 5 * DAY;
      expect(await keys(sim, 'project = MKT ORDER BY key')).toEqual(['MKT-1', 'MKT-2']);
    } finally {
      await sim.close();
    }
  });
});
