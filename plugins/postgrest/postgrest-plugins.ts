// Supabase Data API (PostgREST) plugins for the database_* tools: the tool arguments become PostgREST query
// parameters (filters.ts), and the answer becomes {data, count}. The input schemas already refuse bad
// shapes before the charge; these checks are the second line, refused before anything is sent.
import { type OutboundRequest, type RequestPlugin, type ResponsePlugin, ToolError } from '../../runtime/plugin-api.ts';
import { supabaseProjectsPlugin } from './supabase-projects.ts';
import { checkIdentifier, checkRowKeys, filterParams, FilterError, insertParams, isEmptyFilter, readParams, type QueryParam } from './filters.ts';

type Args = Readonly<Record<string, unknown>>;

/** Runs argument checks; a FilterError becomes an invalid_arguments error with the credits given back. */
function refuseBadArguments<T>(build: () => T): T {
  try {
    return build();
  } catch (err) {
    if (err instanceof FilterError) throw new ToolError('invalid_arguments', `Invalid arguments: ${err.message}`, { refund: true });
    throw err;
  }
}

function withParams(request: OutboundRequest, args: Args, build: () => QueryParam[]): OutboundRequest {
  const params = refuseBadArguments(() => {
    checkIdentifier(args.table, 'table', 'table');
    return build();
  });
  return Object.assign({}, request, { query: [...request.query, ...params] });
}

/** database_read_records: select=, filters, order=, limit=, offset=. */
export const readQueryPlugin: RequestPlugin = {
  name: 'postgrest.read_query',
  hook: 'request',
  description: 'Adds select, filter, order and paging parameters built from columns, filters, order_by, limit and offset.',
  apply: (request, { args }) => withParams(request, args, () => readParams(args)),
};

/** database_create_records: checks the row keys; a batch with differing keys gets columns=. */
export const insertQueryPlugin: RequestPlugin = {
  name: 'postgrest.insert_query',
  hook: 'request',
  description: 'Checks the column names of the records and adds columns= when the rows of a batch have different keys.',
  apply: (request, { args }) => withParams(request, args, () => insertParams(args.records)),
};

/**
 * database_update_records / database_delete_records: the filters as parameters. Without a condition the
 * request would change every row the key can see, so it is refused (Supabase's pg-safeupdate would refuse
 * it too, but plain PostgREST would not).
 */
export const writeFiltersPlugin: RequestPlugin = {
  name: 'postgrest.write_filters',
  hook: 'request',
  description: 'Adds the filter parameters of an update or delete; refuses missing or empty filters and checks the column names of updates.',
  apply: (request, { args }) =>
    withParams(request, args, () => {
      if (isEmptyFilter(args.filters)) {
        throw new FilterError('filters', 'at least one condition is required, so that an update or delete never touches every row by accident');
      }
      if (args.updates !== undefined) checkRowKeys(args.updates, 'updates');
      return filterParams(args.filters);
    }),
};

/** The total of a `Content-Range: 0-24/3573` (or `*\/0`) header; undefined when it carries none. */
export function totalOfContentRange(header: unknown): number | undefined {
  const value = Array.isArray(header) ? header[0] : header;
  const match = typeof value === 'string' ? /\/(\d+)\s*$/.exec(value) : null;
  return match ? Number(match[1]) : undefined;
}

/**
 * {data, count}: `data` is the array of rows PostgREST answered; `count` is the total of the mapped
 * Content-Range header when it has one (reads with Prefer: count=exact), else the number of rows in data
 * (writes with return=representation).
 */
export const resultPlugin: ResponsePlugin = {
  name: 'postgrest.result',
  hook: 'response',
  description: 'Turns {data, count: <Content-Range header>} into {data: rows, count: total or number of rows}.',
  apply(result) {
    const mapped = (result ?? {}) as { data?: unknown; count?: unknown };
    const data = Array.isArray(mapped.data) ? mapped.data : mapped.data === undefined || mapped.data === null ? [] : [mapped.data];
    return { data, count: totalOfContentRange(mapped.count) ?? data.length };
  },
};

export const postgrestPlugins = [readQueryPlugin, insertQueryPlugin, writeFiltersPlugin, resultPlugin, supabaseProjectsPlugin];
