// What the paged lists of the API (the call log, the audit trail) share: their query string, read parameter by
// parameter with every problem naming its parameter; and their downloads, which read every page of a filter.
import { Readable } from 'node:stream';
import { setImmediate } from 'node:timers/promises';
import type { Context } from 'koa';
import { csvLine } from '../audit/audit-trail.ts';
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

/** A download of every item a filter selects, newest first: how to read a page, and how to write an item. */
export interface Download<T> {
  /** The file is named `<name>-<time>.<format>`. */
  name: string;
  read(page: { limit: number; cursor?: string }): Promise<{ items: T[]; next_cursor: string | null }>;
  csv: { columns: string[]; row(item: T): unknown[] };
  /** The JSON download is `{"<field>": [item, ...]}`. */
  json: { field: string; item(item: T): unknown };
}

/**
 * Answers with a download (never cached, like every API answer), streamed: each page is read when the client
 * took the previous one (a byte stream, so nothing is read ahead beyond its small buffer), so a download holds
 * about one page in memory, and other requests get their turn between pages (never more than EXPORT_MAX items).
 */
export function sendDownload<T>(ctx: Context, format: 'csv' | 'json', download: Download<T>): void {
  const stamp = new Date().toISOString().slice(0, 19).replace(/:/g, '-');
  ctx.set('Content-Disposition', `attachment; filename="${download.name}-${stamp}.${format}"`);
  ctx.type = format === 'csv' ? 'text/csv; charset=utf-8' : 'application/json; charset=utf-8';
  ctx.body = Readable.from(downloadText(format, download), { objectMode: false });
}

async function* downloadText<T>(format: 'csv' | 'json', d: Download<T>): AsyncGenerator<string> {
  yield format === 'csv' ? csvLine(d.csv.columns) : `{${JSON.stringify(d.json.field)}:[`;
  let sent = 0;
  let cursor: string | undefined;
  do {
    const page = await d.read({ limit: Math.min(EXPORT_PAGE, EXPORT_MAX - sent), cursor });
    if (format === 'csv') yield page.items.map((item) => csvLine(d.csv.row(item))).join('');
    else if (page.items.length) yield (sent ? ',' : '') + page.items.map((item) => JSON.stringify(d.json.item(item))).join(',');
    sent += page.items.length;
    cursor = page.next_cursor ?? undefined;
    // A store that answers from memory resolves at once: without this the pages would follow one another
    // without letting any other request in.
    await setImmediate();
  } while (cursor && sent < EXPORT_MAX);
  if (format === 'json') yield ']}';
}
