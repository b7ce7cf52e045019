// What the paged lists of the API (the call log, the audit trail) share: their query string, read parameter by
// parameter with every problem naming its parameter; and their downloads, which read every page of a filter.
import type { Context } from 'koa';
import { ApiError } from './http.ts';

/** At most this many items in one download; read this many per page. */
const EXPORT_MAX = 10_000;
const EXPORT_PAGE = 500;

/** The parameters every paged list takes. */
export interface ListPage {
  from?: Date;
  to?: Date;
  limit: number;
  cursor?: string;
  /** A download of every matching item instead of a page. */
  format?: 'csv' | 'json';
}

/** Reads a list's query string; `items` names what the list holds ("event", "call") in messages. */
export function listQueryReader(query: Record<string, unknown>, options: { maxLimit: number; items: string }) {
  const text = (name: string): string | undefined => {
    const v = query[name];
    if (Array.isArray(v)) throw new ApiError(400, `"${name}" is given more than once`);
    return typeof v === 'string' && v !== '' ? v : undefined;
  };
  const date = (name: string) => {
    const v = text(name);
    if (v === undefined) return undefined;
    const t = new Date(v);
    if (Number.isNaN(t.getTime())) throw new ApiError(400, `"${name}" must be an ISO 8601 time, e.g. 2026-01-31 or 2026-01-31T12:00:00Z`);
    return t;
  };
  return {
    text,
    /** A comma-separated parameter, e.g. `outcome=ok,refunded`. */
    list: (name: string): string[] | undefined =>
      text(name)
        ?.split(',')
        .map((v) => v.trim())
        .filter(Boolean),
    page(): ListPage {
      const limitText = text('limit');
      const limit = limitText === undefined ? 50 : Number(limitText);
      if (!Number.isInteger(limit) || limit < 1 || limit > options.maxLimit)
        throw new ApiError(400, `"limit" must be an integer from 1 to ${options.maxLimit}`);
      const format = text('format');
      if (format !== undefined && format !== 'csv' && format !== 'json')
        throw new ApiError(400, `"format" must be csv or json (a download of every matching ${options.items})`);
      const from = date('from');
      const to = date('to');
      if (from && to && from > to) throw new ApiError(400, '"from" must not be after "to"');
      return { from, to, limit, cursor: text('cursor'), format };
    },
  };
}

/** Every item of a filter, newest first, read page by page (never more than EXPORT_MAX). */
export async function everyPage<T>(read: (page: { limit: number; cursor?: string }) => Promise<{ items: T[]; next_cursor: string | null }>): Promise<T[]> {
  const all: T[] = [];
  let cursor: string | undefined;
  do {
    const page = await read({ limit: Math.min(EXPORT_PAGE, EXPORT_MAX - all.length), cursor });
    all.push(...page.items);
    cursor = page.next_cursor ?? undefined;
  } while (cursor && all.length < EXPORT_MAX);
  return all;
}

/** Answers as a file download named `<name>-<time>.<format>` (never cached, like every API answer). */
export function asDownload(ctx: Context, name: string, format: 'csv' | 'json'): void {
  const stamp = new Date().toISOString().slice(0, 19).replace(/:/g, '-');
  ctx.set('Content-Disposition', `attachment; filename="${name}-${stamp}.${format}"`);
  if (format === 'csv') ctx.type = 'text/csv; charset=utf-8';
}
