// Jira's two kinds of pagination: the token pages of /search/jql (no total) and the classic offset
// page beans (startAt/maxResults with isLast or total) of project search and create metadata.
import { type CallPlugin, ToolError, type UpstreamResponse, UpstreamStatusError } from '../../runtime/plugin-api.ts';

/** Upper bound on pages of one call, so a provider that never says "last" cannot loop us forever. */
const MAX_PAGES = 200;

interface SearchPage {
  issues?: unknown[];
  nextPageToken?: string;
  isLast?: boolean;
}

/**
 * The rendered request is POST /rest/api/3/search/jql whose body's `maxResults` is how many issues the
 * caller wants in all. Follows nextPageToken until that many issues or the last page, and answers
 * {total, issues}: `total` is exact when the last page was reached, otherwise it is Jira's
 * approximate count (POST /search/approximate-count), never less than the issues returned.
 */
export const searchJqlPlugin: CallPlugin = {
  name: 'jira.search_jql',
  hook: 'call',
  description: 'Runs an enhanced JQL search across token pages up to body.maxResults issues and adds `total` (exact, or the approximate count).',
  async apply(request, { http, progress }) {
    const body = { ...(request.body as Record<string, unknown>) };
    const wanted = Number(body.maxResults);
    if (!Number.isInteger(wanted) || wanted < 1) throw new ToolError('invalid_arguments', 'maxResults must be a positive integer', { refund: true });
    const issues: unknown[] = [];
    let token: string | undefined;
    let reachedEnd = false;
    let last: UpstreamResponse | undefined;
    for (let pageNo = 0; pageNo < MAX_PAGES && issues.length < wanted; pageNo++) {
      // eslint-disable-next-line no-restricted-syntax -- the body holds the caller's JSON: an own "__proto__" key stays data
      const pageBody = { ...body, maxResults: wanted - issues.length, ...(token ? { nextPageToken: token } : {}) };
      last = await http.send(Object.assign({}, request, { body: pageBody }));
      const page = (last.body ?? {}) as SearchPage;
      const got = Array.isArray(page.issues) ? page.issues : [];
      issues.push(...got);
      token = typeof page.nextPageToken === 'string' && page.nextPageToken ? page.nextPageToken : undefined;
      reachedEnd = page.isLast === true || !token;
      if (reachedEnd || got.length === 0) break;
      progress(`${issues.length} issues read`);
    }
    let total = issues.length;
    if (!reachedEnd) {
      const counted = await http.send({
        method: 'POST',
        path: request.path.replace(/\/jql$/, '/approximate-count'),
        query: [],
        headers: {},
        body: { jql: body.jql },
      });
      const count = (counted.body as { count?: unknown } | null)?.count;
      total = typeof count === 'number' ? Math.max(count, issues.length) : issues.length;
    }
    return { status: 200, headers: last?.headers ?? {}, body: { total, issues: issues.slice(0, wanted) } };
  },
};

/** `none_status`: a status Jira answers when nothing matches, read as an empty list. */
type OffsetOptions = { items: string; none_status?: number };

/**
 * Reads every page of a classic offset page bean. The rendered request's `maxResults` query parameter is
 * the page size; `startAt` is set per page. Stops at isLast, at `total`, or at an empty page. Answers
 * {<items>: all items, total}.
 */
export const offsetPagesPlugin: CallPlugin<OffsetOptions> = {
  name: 'jira.offset_pages',
  hook: 'call',
  description:
    "Collects all pages of a startAt/maxResults list; `items` names the key holding each page's list (values, issueTypes...); `none_status` is a status Jira answers instead of an empty page (project search: 404).",
  optionsSchema: {
    type: 'object',
    additionalProperties: false,
    required: ['items'],
    properties: { items: { type: 'string', minLength: 1 }, none_status: { type: 'integer', minimum: 400, maximum: 499 } },
  },
  async apply(request, { options, http, progress }) {
    const baseQuery = request.query.filter(([name]) => name !== 'startAt');
    const all: unknown[] = [];
    let last: UpstreamResponse | undefined;
    for (let pageNo = 0; pageNo < MAX_PAGES; pageNo++) {
      last = await http.send(Object.assign({}, request, { query: [...baseQuery, ['startAt', String(all.length)]] }), { expectOk: false });
      // Jira's OpenAPI: project search answers 404 "if no projects matching the search criteria are found".
      if (last.status === options.none_status) break;
      if (last.status < 200 || last.status >= 300) throw new UpstreamStatusError(last);
      const page = (last.body ?? {}) as Record<string, unknown>;
      const got = Array.isArray(page[options.items]) ? (page[options.items] as unknown[]) : [];
      all.push(...got);
      const total = typeof page.total === 'number' ? page.total : undefined;
      if (got.length === 0 || page.isLast === true || (total !== undefined && all.length >= total)) break;
      progress(`${all.length} ${options.items} read`);
    }
    return { status: 200, headers: last?.headers ?? {}, body: { [options.items]: all, total: all.length } };
  },
};
