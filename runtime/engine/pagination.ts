// Declared pagination (a request's `paginate:`): reads one page or several, collects their items, and says
// whether there is more and where the list goes on. Four ways providers page: a cursor in the body, page
// numbers, offsets, and the RFC 8288 Link header (rel="next").
import type { UpstreamResponse } from '../http/client.ts';
import type { OutboundRequest, ProviderHttp } from '../plugin-api.ts';
import { lookup } from '../template/template.ts';
import { type CompiledTree, renderTree } from '../template/tree.ts';
import type { CompiledPagination } from '../toolspec/catalog.ts';
import { ToolError } from '../tool-error.ts';

/** Pages one call reads at most, whatever max_pages says: a provider of tiny pages cannot keep us busy. */
export const MAX_PAGES = 100;

/** A paginated request's answer: the last page, with every page's items and where the list goes on. */
export interface PagedResponse extends UpstreamResponse {
  items: unknown[];
  has_more: boolean;
  /** What selects the next page (a cursor, a page number, an offset); absent when there is none. */
  next_cursor?: string | number;
  pages: number;
}

/** The next page: what the client can send for it, and the request that reads it now. */
interface NextPage {
  cursor?: string | number;
  request?: OutboundRequest;
}

/**
 * Sends `first` and, while there is a next page, max_pages allows and the items collected leave room in the
 * size budget for one more page as large as the largest so far, the next ones. `base` is the URL paths are
 * below (a Link header's relative URL resolves against it, and a link elsewhere is never followed).
 */
export async function readPages(
  p: CompiledPagination,
  first: OutboundRequest,
  http: ProviderHttp,
  view: Record<string, unknown>,
  base: string | undefined,
  progress: (message: string) => void,
): Promise<PagedResponse> {
  const maxPages = Math.min(MAX_PAGES, wholeNumber(p.maxPages, view, 'max_pages') ?? 1);
  const pageSize = wholeNumber(p.pageSize, view, 'page_size');
  const items: unknown[] = [];
  let request = first;
  let bytes = 0;
  let largest = 0;
  let pages = 0;
  for (;;) {
    const res = await http.send(request);
    pages++;
    const list = lookup(res.body, p.items);
    if (!Array.isArray(list)) {
      throw new ToolError('unexpected_response', `The provider's answer has no list at "${p.itemsPointer}" (paginate.items)`, {
        providerStatus: res.status,
        refund: true,
      });
    }
    items.push(...list);
    const size = Buffer.byteLength(JSON.stringify(list));
    bytes += size;
    largest = Math.max(largest, size);
    const next = nextPage(p, request, res, list, pageSize, base);
    if (!next?.request || pages >= maxPages || bytes + largest > p.maxBytes) {
      return Object.assign({}, res, { items, has_more: next !== undefined }, next?.cursor !== undefined ? { next_cursor: next.cursor } : undefined, { pages });
    }
    progress(`${items.length} items read`);
    request = next.request;
  }
}

function nextPage(
  p: CompiledPagination,
  request: OutboundRequest,
  res: UpstreamResponse,
  list: unknown[],
  pageSize: number | undefined,
  base: string | undefined,
): NextPage | undefined {
  const flag = p.hasMore && lookup(res.body, p.hasMore);
  if (p.hasMore && flag !== undefined && flag !== null && !flag) return undefined;
  switch (p.style) {
    case 'cursor': {
      const cursor = lookup(res.body, p.cursor ?? []);
      if (cursor === undefined || cursor === null || cursor === '') return undefined;
      if (typeof cursor !== 'string' && typeof cursor !== 'number') return undefined;
      return { cursor, request: withParam(request, p, cursor) };
    }
    case 'page':
    case 'offset': {
      const current = Number(paramValue(request, p) ?? (p.style === 'page' ? 1 : 0));
      if (!Number.isFinite(current)) return undefined;
      const next = p.style === 'page' ? current + 1 : current + list.length;
      const total = p.total && lookup(res.body, p.total);
      let more: boolean;
      if (p.hasMore && typeof flag === 'boolean') more = flag;
      else if (list.length === 0) more = false;
      else if (typeof total === 'number') more = p.style === 'offset' ? next < total : pageSize !== undefined && current * pageSize < total;
      else more = pageSize === undefined || list.length >= pageSize;
      return more ? { cursor: next, request: withParam(request, p, next) } : undefined;
    }
    case 'link': {
      const target = nextLink(res.headers.link);
      if (!target || !base) return undefined;
      let url: URL;
      try {
        url = new URL(target, base + request.path);
      } catch {
        return undefined;
      }
      const value = url.searchParams.get(p.param.name) ?? undefined;
      const cursor = value !== undefined && /^(0|[1-9]\d{0,14})$/.test(value) ? Number(value) : value;
      // A next link to another origin is never followed (nor sent the account's credentials).
      const sameOrigin = url.origin === new URL(base).origin;
      return { cursor, request: sameOrigin ? Object.assign({}, request, { url, path: '', query: [] }) : undefined };
    }
  }
}

/** A number of a pagination key: a constant or a template's value; a template giving nothing is undefined. */
function wholeNumber(tree: CompiledTree | undefined, view: Record<string, unknown>, key: string): number | undefined {
  if (!tree) return undefined;
  const value = renderTree(tree, view);
  if (value === undefined || value === null || value === '') return undefined;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1)
    throw new ToolError('invalid_arguments', `paginate.${key} must be a whole number of at least 1, not ${JSON.stringify(value)}`);
  return n;
}

function paramValue(request: OutboundRequest, p: CompiledPagination): unknown {
  if (p.param.in === 'query') return request.query.find(([name]) => name === p.param.name)?.[1];
  return (request.body as Record<string, unknown> | undefined)?.[p.param.name];
}

function withParam(request: OutboundRequest, p: CompiledPagination, value: string | number): OutboundRequest {
  const { name } = p.param;
  if (p.param.in === 'query') return Object.assign({}, request, { query: [...request.query.filter(([n]) => n !== name), [name, String(value)]] });
  // eslint-disable-next-line no-restricted-syntax -- the body holds the caller's JSON: an own "__proto__" key stays data
  const body = { ...(request.body as Record<string, unknown> | undefined), [name]: value };
  return Object.assign({}, request, { body });
}

/**
 * The URL of the rel="next" link of a Link header (RFC 8288: `<uri>; rel="next"; ...`, links separated by commas,
 * rel a space-separated list in any case, parameter values tokens or quoted strings).
 */
export function nextLink(header: string | string[] | undefined): string | undefined {
  const text = Array.isArray(header) ? header.join(', ') : header;
  if (!text) return undefined;
  let i = 0;
  while (i < text.length) {
    const open = text.indexOf('<', i);
    if (open < 0) return undefined;
    const close = text.indexOf('>', open);
    if (close < 0) return undefined;
    const uri = text.slice(open + 1, close).trim();
    i = close + 1;
    let rel: string | undefined;
    // Parameters up to the comma that ends this link (commas inside quoted strings do not).
    while (i < text.length) {
      const m = /^\s*;\s*([!#$%&'*+.^_`|~0-9A-Za-z-]+)\s*(?:=\s*(?:"((?:[^"\\]|\\.)*)"|([^\s;,]*)))?/.exec(text.slice(i));
      if (!m) break;
      i += m[0].length;
      if (m[1].toLowerCase() === 'rel' && rel === undefined) rel = (m[2]?.replace(/\\(.)/g, '$1') ?? m[3] ?? '').toLowerCase();
    }
    if (rel?.split(/\s+/).includes('next')) return uri;
    const comma = text.indexOf(',', i);
    if (comma < 0) return undefined;
    i = comma + 1;
  }
  return undefined;
}
