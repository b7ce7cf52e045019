// The GitHub provider of issue 29's "Why", written with the spec language alone (no plugin, no TypeScript:
// test/fixtures/github-specs/github/), served by the real service and called through the official MCP SDK
// client, against a loopback stand-in that answers like GitHub (test/support/github-fake.ts): 201, 404, 410,
// GitHub's 422 with its `errors` list, Link paging, the rate limit's 403 told apart from a permission's by its
// headers, and a provider header from an account field whose default stands in for an account saved before.
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runExchanges } from '../runtime/engine/exchange-runner.ts';
import { pluginRegistry } from '../plugins/registry.ts';
import { loadCatalog } from '../runtime/toolspec/loader.ts';
import { type GitHubFake, startGitHubFake } from './support/github-fake.ts';
import { connectV2 } from './support/mcp-clients.ts';
import { type Owner, type TestService, createOwner, createServer, startTestService } from './support/service.ts';
import { toolCalls } from './support/tool-calls.ts';

const SPECS = path.resolve('test/fixtures/github-specs');
const REPO = { owner: 'octocat', repo: 'Hello-World' };

describe('a provider in YAML alone: GitHub issues', () => {
  let fake: GitHubFake;
  let svc: TestService;
  let owner: Owner;
  let client: Awaited<ReturnType<typeof connectV2>>;
  const tools = toolCalls(() => client);
  const balance = async () => (await svc.call('GET', '/api/credits', { token: owner.token })).body.balance;

  beforeAll(async () => {
    fake = await startGitHubFake();
    svc = await startTestService({ TOOL_SPECS_DIR: SPECS });
    owner = await createOwner(svc, 100);
    const made = await createServer(svc, owner, {
      accounts: { github: { kind: 'github', name: 'GitHub', api_url: fake.url, token: fake.token } },
      tools: ['github_list_issues', 'github_get_issue', 'github_create_issue', 'github_create_comment'].map((base_tool) => ({ base_tool, account: 'github' })),
    });
    client = await connectV2(svc.url, made.serverId, made.key);
  }, 60_000);
  afterAll(async () => {
    await client?.close();
    await svc?.close();
    await fake?.close();
  });

  it('creates an issue (201) and comments on it, reads it back, and names a missing one (404)', async () => {
    const created = await tools.ok('github_create_issue', { ...REPO, title: 'Login fails', body: 'Since **today**.', labels: ['bug'] });
    expect(created).toEqual({ number: 8, url: 'https://github.com/octocat/Hello-World/issues/8', title: 'Login fails', state: 'open' });
    const sent = fake.requests.at(-1)!;
    expect(JSON.parse(sent.body)).toEqual({ title: 'Login fails', body: 'Since **today**.', labels: ['bug'] });
    // The provider's headers: a constant, and one from an account field (its default).
    expect(sent.headers).toMatchObject({ accept: 'application/vnd.github+json', 'x-github-api-version': '2022-11-28', authorization: `Bearer ${fake.token}` });

    const comment = await tools.ok('github_create_comment', { ...REPO, number: 8, body: 'Me too' });
    expect(comment).toEqual({ id: 1, url: 'https://github.com/octocat/Hello-World/issues/8#issuecomment-1', created_at: '2011-04-14T16:00:49Z' });
    const read = await tools.ok('github_get_issue', { ...REPO, number: 8 });
    expect(read).toMatchObject({ number: 8, title: 'Login fails', body: 'Since **today**.', labels: ['bug'], assignees: [], comments: 1, author: 'octocat' });

    const missing = await tools.fails('github_get_issue', { ...REPO, number: 404 });
    expect(missing).toEqual({
      code: 'issue_not_found',
      message:
        'Issue octocat/Hello-World#404 not found: Not Found. Check the owner, the repository and the number, and that the token can read the repository.',
      retryable: false,
      provider_status: 404,
    });
    expect((await tools.fails('github_get_issue', { owner: 'octocat', repo: 'no-issues', number: 1 })).code).toBe('issues_disabled');
  });

  it("brings GitHub's 422 to the client with its details, and keeps the credit (GitHub answered)", async () => {
    const before = await balance();
    const refused = await tools.fails('github_create_issue', { ...REPO, title: 'Assign a stranger', assignees: ['hubot', 'ghost', 'nobody'] });
    expect(refused).toEqual({
      code: 'validation_failed',
      message: 'GitHub refused the request: Validation Failed; Issue.assignees: invalid. Correct what GitHub names above.',
      retryable: false,
      provider_status: 422,
    });
    expect(await balance()).toBe(before - 1);
  });

  it('pages by the Link header: has_more and next_page from it, the next page, and several pages in one call', async () => {
    // Open items, newest first: 8 Login fails, 7 Dark mode, 6 (a pull request), 4 Crash on start, 3 (a pull request), 2 Typo, 1 Found a bug.
    const first = await tools.ok('github_list_issues', { ...REPO, per_page: 3 });
    expect(first.issues.map((i: any) => i.number)).toEqual([8, 7]);
    expect(first).toMatchObject({ has_more: true, next_page: 2 });
    const second = await tools.ok('github_list_issues', { ...REPO, per_page: 3, page: first.next_page });
    expect(second.issues.map((i: any) => [i.number, i.title, i.labels])).toEqual([
      [4, 'Crash on start', ['bug', 'crash']],
      [2, 'Typo in the README', ['docs']],
    ]);
    expect(second).toMatchObject({ has_more: true, next_page: 3 });
    const third = await tools.ok('github_list_issues', { ...REPO, per_page: 3, page: 3 });
    expect(third).toEqual({
      issues: [
        {
          number: 1,
          title: 'Found a bug',
          state: 'open',
          url: 'https://github.com/octocat/Hello-World/issues/1',
          author: 'octocat',
          labels: ['bug'],
          comments: 0,
          created_at: '2011-04-11T09:00:00Z',
        },
      ],
      has_more: false,
    });

    // All of it in one call: the Link header's next URL is followed (GitHub's /repositories/<id> form).
    const sentBefore = fake.requests.length;
    const all = await tools.ok('github_list_issues', { ...REPO, per_page: 3, pages: 10 });
    expect(all.issues.map((i: any) => i.number)).toEqual([8, 7, 4, 2, 1]);
    expect(all.has_more).toBe(false);
    expect(fake.requests.slice(sentBefore).map((r) => `${r.path}?${r.query}`)).toEqual([
      '/repos/octocat/Hello-World/issues?state=open&per_page=3',
      '/repositories/1296269/issues?state=open&per_page=3&page=2',
      '/repositories/1296269/issues?state=open&per_page=3&page=3',
    ]);
    // Two pages asked for: the second's next page is where it goes on.
    expect(await tools.ok('github_list_issues', { ...REPO, per_page: 3, pages: 2 })).toMatchObject({ has_more: true, next_page: 3 });
    expect((await tools.ok('github_list_issues', { ...REPO, state: 'closed' })).issues.map((i: any) => i.title)).toEqual(['Old question']);
  });

  it("tells the rate limit's 403 from a permission's by its headers, and gives the credit back for it", async () => {
    const before = await balance();
    fake.remaining = 0;
    try {
      const limited = await tools.fails('github_list_issues', REPO);
      expect(limited).toMatchObject({ code: 'rate_limited', retryable: true, provider_status: 403 });
      expect(limited.message).toMatch(/^GitHub's rate limit was reached; it resets at 1735689600 \(Unix time\): API rate limit exceeded for user ID 1\./);
    } finally {
      fake.remaining = 5000;
    }
    expect(await balance()).toBe(before);
  });

  it("gives an account saved before a field existed that field's default (in the header it feeds, and in its listing)", async () => {
    const made = await createServer(svc, owner, {
      accounts: { old: { kind: 'github', name: 'GitHub (old)', api_url: fake.url, token: fake.token } },
      tools: [{ base_tool: 'github_get_issue', account: 'old' }],
    });
    // As if the account had been saved before provider.yaml declared api_version (it has not been used yet, so
    // nothing of it is cached).
    const accounts = svc.store.collection<{ _id: string; fields: Record<string, string> }>('accounts');
    await accounts.updateOne({ _id: made.accountIds.old }, { $unset: { 'fields.api_version': '' } });
    expect((await accounts.findOne({ _id: made.accountIds.old }))!.fields).toEqual({ api_url: fake.url });

    const old = await connectV2(svc.url, made.serverId, made.key);
    try {
      expect(await toolCalls(old).ok('github_get_issue', { ...REPO, number: 1 })).toMatchObject({ number: 1, title: 'Found a bug' });
    } finally {
      await old.close();
    }
    expect(fake.requests.at(-1)!.headers['x-github-api-version']).toBe('2022-11-28');
    const listed = await svc.call('GET', `/api/accounts/${made.accountIds.old}`, { token: owner.token });
    expect(listed.body).toMatchObject({ api_url: fake.url, api_version: '2022-11-28' });
  });
});

describe('the GitHub provider without a network: its exchanges', () => {
  it('run as written', async () => {
    const report = await runExchanges(await loadCatalog(SPECS, pluginRegistry));
    expect(report.failures).toEqual([]);
    expect(report).toMatchObject({ ran: 12, tools: 4 });
  });
});
