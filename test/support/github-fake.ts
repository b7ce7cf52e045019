// A loopback stand-in that answers like GitHub's REST API for issues (the shapes of GitHub's OpenAPI document,
// /work/shared/openapi/github-api.github.com.json.gz): list (with pull requests among the issues and RFC 8288
// Link paging), get, create (201 with Location; 422 Validation Failed with an `errors` list), comment, GET /user;
// 401 for a bad token, 404, 410 for a repository without issues, and the rate limit's 403 with its headers.
import type { ServerResponse } from 'node:http';
import { type RecordedRequest, type RunningSandbox, listenOnLoopback, readBody, sendJson } from '../../sandboxes/harness.ts';

const DOCS = 'https://docs.github.com/rest';

export interface GitHubFake extends RunningSandbox {
  token: string;
  requests: RecordedRequest[];
  /** Requests left in the rate-limit window; at 0 every request is the rate limit's 403. */
  remaining: number;
}

interface Repo {
  id: number;
  owner: string;
  name: string;
  hasIssues: boolean;
  collaborators: string[];
  issues: Array<Record<string, unknown>>;
  comments: Array<Record<string, unknown>>;
}

const user = (login: string, id: number) => ({
  login,
  id,
  node_id: Buffer.from(`04:User${id}`).toString('base64'),
  avatar_url: `https://avatars.githubusercontent.com/u/${id}?v=4`,
  url: `https://api.github.com/users/${login}`,
  html_url: `https://github.com/${login}`,
  type: 'User',
  site_admin: false,
});
const USERS: Record<string, number> = { octocat: 1, hubot: 2, monalisa: 3 };

export async function startGitHubFake(token = 'ghp_fake_0123456789abcdefghijklmnopqrstuv'): Promise<GitHubFake> {
  const fake = { token, requests: [] as RecordedRequest[], remaining: 5000 } as GitHubFake;
  const repos: Repo[] = [
    { id: 1296269, owner: 'octocat', name: 'Hello-World', hasIssues: true, collaborators: ['octocat', 'hubot'], issues: [], comments: [] },
    { id: 1300192, owner: 'octocat', name: 'no-issues', hasIssues: false, collaborators: ['octocat'], issues: [], comments: [] },
  ];
  const hello = repos[0];
  let origin = '';
  const issue = (
    repo: Repo,
    fields: { title: string; body?: string | null; author: string; labels?: string[]; assignees?: string[]; pull?: boolean; state?: string },
  ) => {
    const number = repo.issues.length + 1;
    const kind = fields.pull ? 'pull' : 'issues';
    const created = new Date(Date.UTC(2011, 3, 10 + number, 9, 0, 0)).toISOString().replace('.000', '');
    const item: Record<string, unknown> = {
      id: repo.id * 1000 + number,
      node_id: Buffer.from(`05:Issue${repo.id * 1000 + number}`).toString('base64'),
      url: `${origin}/repos/${repo.owner}/${repo.name}/issues/${number}`,
      repository_url: `${origin}/repos/${repo.owner}/${repo.name}`,
      comments_url: `${origin}/repos/${repo.owner}/${repo.name}/issues/${number}/comments`,
      html_url: `https://github.com/${repo.owner}/${repo.name}/${kind}/${number}`,
      number,
      state: fields.state ?? 'open',
      state_reason: null,
      title: fields.title,
      body: fields.body ?? null,
      user: user(fields.author, USERS[fields.author] ?? 99),
      labels: (fields.labels ?? []).map((name, i) => ({ id: 208045946 + i, node_id: 'MDU6TGFiZWwyMDgwNDU5NDY=', name, color: 'f29513', default: i === 0 })),
      assignee: fields.assignees?.length ? user(fields.assignees[0], USERS[fields.assignees[0]]) : null,
      assignees: (fields.assignees ?? []).map((a) => user(a, USERS[a])),
      milestone: null,
      locked: false,
      active_lock_reason: null,
      comments: 0,
      closed_at: fields.state === 'closed' ? created : null,
      created_at: created,
      updated_at: created,
      author_association: 'COLLABORATOR',
      ...(fields.pull
        ? {
            pull_request: {
              url: `${origin}/repos/${repo.owner}/${repo.name}/pulls/${number}`,
              html_url: `https://github.com/${repo.owner}/${repo.name}/pull/${number}`,
            },
          }
        : {}),
    };
    repo.issues.push(item);
    return item;
  };

  const running = await listenOnLoopback(async (req, res) => {
    const url = new URL(req.url ?? '/', origin);
    const body = await readBody(req);
    fake.requests.push({ method: req.method ?? 'GET', path: url.pathname, query: url.searchParams, headers: req.headers, body });
    if (req.headers.authorization !== `Bearer ${token}`) return error(res, 401, 'Bad credentials', DOCS);
    if (fake.remaining <= 0) {
      return error(
        res,
        403,
        'API rate limit exceeded for user ID 1. If you reach out to GitHub Support for help, please include the request ID 0C51:3B2A:1A2B3C.',
        `${DOCS}/overview/rate-limits-for-the-rest-api`,
      );
    }
    fake.remaining--;
    const version = req.headers['x-github-api-version'];
    if (version !== undefined && version !== '2022-11-28' && version !== '2026-03-10') {
      return error(res, 400, `API version ${String(version)} is not supported.`, `${DOCS}/about-the-rest-api/api-versions`);
    }
    if (req.method === 'GET' && url.pathname === '/user') return send(res, 200, user('octocat', 1));

    const byName = /^\/repos\/([^/]+)\/([^/]+)\/issues(?:\/(\d+)(\/comments)?)?$/.exec(url.pathname);
    const byId = /^\/repositories\/(\d+)\/issues$/.exec(url.pathname);
    const repo = byName
      ? repos.find((r) => r.owner === decodeURIComponent(byName[1]) && r.name === decodeURIComponent(byName[2]))
      : byId && repos.find((r) => r.id === Number(byId[1]));
    if (!repo) return error(res, 404, 'Not Found', `${DOCS}/issues/issues`);
    if (!repo.hasIssues) return error(res, 410, 'Issues are disabled for this repo', 'https://docs.github.com/v3/issues/');
    const number = byName?.[3] ? Number(byName[3]) : undefined;
    const found = number === undefined ? undefined : repo.issues[number - 1];
    if (number !== undefined && !found) return error(res, 404, 'Not Found', `${DOCS}/issues/issues#get-an-issue`);

    if (req.method === 'GET' && number === undefined) return list(res, repo, url.searchParams);
    if (req.method === 'GET' && found && !byName?.[4]) return send(res, 200, found);
    const input = body ? (JSON.parse(body) as Record<string, unknown>) : {};
    if (req.method === 'POST' && number === undefined) {
      if (typeof input.title !== 'string' || !input.title) {
        return error(res, 422, 'Invalid request.\n\n"title" wasn\'t supplied.', `${DOCS}/issues/issues#create-an-issue`);
      }
      const assignees = (input.assignees as string[] | undefined) ?? [];
      const strangers = assignees.filter((a) => !repo.collaborators.includes(a));
      if (strangers.length) {
        return send(res, 422, {
          message: 'Validation Failed',
          errors: strangers.map((value) => ({ value, resource: 'Issue', field: 'assignees', code: 'invalid' })),
          documentation_url: `${DOCS}/issues/issues#create-an-issue`,
          status: '422',
        });
      }
      const created = issue(repo, {
        title: input.title,
        body: input.body as string | undefined,
        author: 'octocat',
        labels: input.labels as string[],
        assignees,
      });
      return send(res, 201, created, { location: String(created.url) });
    }
    if (req.method === 'POST' && found && byName?.[4]) {
      if (typeof input.body !== 'string' || !input.body) {
        return send(res, 422, {
          message: 'Validation Failed',
          errors: [{ resource: 'IssueComment', code: 'missing_field', field: 'body' }],
          documentation_url: `${DOCS}/issues/comments#create-an-issue-comment`,
          status: '422',
        });
      }
      const id = repo.comments.length + 1;
      const comment = {
        id,
        node_id: Buffer.from(`012:IssueComment${id}`).toString('base64'),
        url: `${origin}/repos/${repo.owner}/${repo.name}/issues/comments/${id}`,
        html_url: `${String(found.html_url)}#issuecomment-${id}`,
        body: input.body,
        user: user('octocat', 1),
        created_at: '2011-04-14T16:00:49Z',
        updated_at: '2011-04-14T16:00:49Z',
        issue_url: found.url,
        author_association: 'COLLABORATOR',
      };
      repo.comments.push(comment);
      found.comments = Number(found.comments) + 1;
      return send(res, 201, comment, { location: comment.url });
    }
    error(res, 404, 'Not Found', DOCS);
  });

  /** GitHub's headers on every answer: the rate-limit window. */
  const limitHeaders = () => ({
    'x-ratelimit-limit': '5000',
    'x-ratelimit-remaining': String(Math.max(0, fake.remaining)),
    'x-ratelimit-reset': '1735689600',
    'x-ratelimit-used': String(5000 - Math.max(0, fake.remaining)),
    'x-ratelimit-resource': 'core',
    'x-github-api-version-selected': '2022-11-28',
  });
  const send = (res: ServerResponse, status: number, value: unknown, headers: Record<string, string> = {}) =>
    sendJson(res, status, value, { ...limitHeaders(), ...headers });
  const error = (res: ServerResponse, status: number, message: string, documentation: string) =>
    send(res, status, { message, documentation_url: documentation, status: String(status) });

  /** GET .../issues: newest first, state and labels filters, per_page and page, and the Link header. */
  function list(res: ServerResponse, repo: Repo, query: URLSearchParams): void {
    const state = query.get('state') ?? 'open';
    const labels = (query.get('labels') ?? '').split(',').filter(Boolean);
    const perPage = Math.min(100, Number(query.get('per_page') ?? 30));
    const page = Math.max(1, Number(query.get('page') ?? 1));
    const matching = [...repo.issues]
      .reverse()
      .filter((i) => state === 'all' || i.state === state)
      .filter((i) => labels.every((l) => (i.labels as Array<{ name: string }>).some((x) => x.name === l)));
    const last = Math.max(1, Math.ceil(matching.length / perPage));
    const link = (n: number, rel: string) => {
      const params = new URLSearchParams(query);
      params.set('page', String(n));
      return `<${origin}/repositories/${repo.id}/issues?${params}>; rel="${rel}"`;
    };
    const links = [
      ...(page > 1 ? [link(page - 1, 'prev')] : []),
      ...(page < last ? [link(page + 1, 'next'), link(last, 'last')] : []),
      ...(page > 1 ? [link(1, 'first')] : []),
    ];
    send(res, 200, matching.slice((page - 1) * perPage, page * perPage), links.length ? { link: links.join(', ') } : {});
  }

  origin = running.url;
  fake.url = running.url;
  fake.close = running.close;
  // Seven items, two of them pull requests (GitHub lists those among the issues), one closed.
  issue(hello, { title: 'Found a bug', body: "I'm having a problem with this.", author: 'octocat', labels: ['bug'], assignees: ['octocat'] });
  issue(hello, { title: 'Typo in the README', author: 'monalisa', labels: ['docs'] });
  issue(hello, { title: 'Fix the typo', author: 'monalisa', pull: true });
  issue(hello, { title: 'Crash on start', body: 'Stack trace attached.', author: 'hubot', labels: ['bug', 'crash'] });
  issue(hello, { title: 'Old question', author: 'hubot', state: 'closed' });
  issue(hello, { title: 'Speed up the build', author: 'octocat', pull: true });
  issue(hello, { title: 'Dark mode', author: 'monalisa', labels: ['enhancement'] });
  return fake;
}
