// Writing and reading block trees through the Notion API, within its request limits: at most 100 blocks
// in a children array, two nesting levels and 1,000 blocks per request, 500 KB of payload.
import type { OutboundRequest, ProviderHttp } from '../../runtime/plugin-api.ts';
import type { BlockBody, NotionBlock } from './markdown.ts';

export const MAX_CHILDREN = 100;
const MAX_BLOCKS_PER_REQUEST = 1000;
/** Below Notion's 500 KB payload limit, leaving room for the rest of the body. */
const MAX_BATCH_CHARS = 400_000;

const enc = encodeURIComponent;

export function request(method: OutboundRequest['method'], path: string, body?: unknown, query: Array<[string, string]> = []): OutboundRequest {
  return { method, path, query, headers: {}, body };
}

const bodyOf = (b: NotionBlock) => b[b.type] as BlockBody;
export const kidsOf = (b: NotionBlock): NotionBlock[] => bodyOf(b).children ?? [];

function withKids(b: NotionBlock, kids: NotionBlock[]): NotionBlock {
  const body = { ...bodyOf(b) };
  if (kids.length) body.children = kids;
  else delete body.children;
  return Object.assign({}, b, { [b.type]: body });
}

/** What one request carries of a block: the block and its first 100 children, without grandchildren. */
export function twoLevels(b: NotionBlock): NotionBlock {
  return withKids(
    b,
    kidsOf(b)
      .slice(0, MAX_CHILDREN)
      .map((k) => withKids(k, [])),
  );
}

/** Splits top-level blocks into request batches within Notion's limits (each sent in two-level form). */
export function batches(blocks: readonly NotionBlock[]): NotionBlock[][] {
  const out: NotionBlock[][] = [];
  let current: NotionBlock[] = [];
  let count = 0;
  let chars = 0;
  for (const b of blocks) {
    const sent = twoLevels(b);
    const n = 1 + kidsOf(sent).length;
    const size = JSON.stringify(sent).length;
    if (current.length && (current.length === MAX_CHILDREN || count + n > MAX_BLOCKS_PER_REQUEST || chars + size > MAX_BATCH_CHARS)) {
      out.push(current);
      [current, count, chars] = [[], 0, 0];
    }
    current.push(b);
    count += n;
    chars += size;
  }
  if (current.length) out.push(current);
  return out;
}

/** Counts every block of a tree. */
export function countBlocks<T>(blocks: readonly T[], kids: (b: T) => readonly T[]): number {
  return blocks.reduce((n, b) => n + 1 + countBlocks(kids(b), kids), 0);
}

/** Appends block trees under existing blocks or pages, as many levels and batches as they need. */
export class BlockWriter {
  /** Blocks written so far (for progress and partial-failure messages). */
  written = 0;

  constructor(
    private readonly http: ProviderHttp,
    private readonly progress: (message: string) => void = () => {},
    readonly total = 0,
  ) {}

  /** Appends `blocks` (any depth, any number) under the page or block `parentId`. */
  async append(parentId: string, blocks: readonly NotionBlock[]): Promise<void> {
    for (const batch of batches(blocks)) {
      const res = await this.http.send(request('PATCH', `/v1/blocks/${enc(parentId)}/children`, { children: batch.map(twoLevels) }));
      const ids = ((res.body as { results?: Array<{ id: string }> }).results ?? []).map((r) => r.id);
      this.sent(batch);
      await this.completeDeeper(batch, ids);
    }
  }

  /** Records a batch sent in two-level form. */
  sent(batch: readonly NotionBlock[]): void {
    this.written += countBlocks(batch.map(twoLevels), kidsOf);
    if (this.total) this.progress(`Wrote ${this.written} of ${this.total} blocks`);
  }

  /**
   * Writes what the two-level form left out of blocks that now exist with the given ids: children past
   * the 100th and the content of the third level and below.
   */
  async completeDeeper(blocks: readonly NotionBlock[], ids: readonly string[]): Promise<void> {
    for (const [i, b] of blocks.entries()) {
      const kids = kidsOf(b);
      const first = kids.slice(0, MAX_CHILDREN);
      if (first.some((k) => kidsOf(k).length)) {
        const childIds = await this.childIds(ids[i]);
        for (const [j, kid] of first.entries()) if (kidsOf(kid).length) await this.append(childIds[j], kidsOf(kid));
      }
      if (kids.length > MAX_CHILDREN) await this.append(ids[i], kids.slice(MAX_CHILDREN));
    }
  }

  /** Ids of the first 100 children of a block or page, in order. */
  async childIds(id: string): Promise<string[]> {
    const res = await this.http.send(request('GET', `/v1/blocks/${enc(id)}/children`, undefined, [['page_size', String(MAX_CHILDREN)]]));
    return ((res.body as { results?: Array<{ id: string }> }).results ?? []).map((r) => r.id);
  }
}

/** A block as returned by get_page_content: its type and content, and its children read recursively. */
export interface ReadBlock {
  id: string;
  type: string;
  has_children: boolean;
  children?: ReadBlock[];
  [type: string]: unknown;
}

/** Child pages and databases have "children" of their own (their content) that is not part of this page. */
const SEPARATE_CONTENT = new Set(['child_page', 'child_database']);

/** Reads all children of a page or block, every page of them, following has_children. `firstPath` is the encoded children path. */
export async function readBlockTree(http: ProviderHttp, firstPath: string, signal?: AbortSignal): Promise<ReadBlock[]> {
  const out: ReadBlock[] = [];
  let cursor: string | null = null;
  do {
    signal?.throwIfAborted();
    const query: Array<[string, string]> = [['page_size', String(MAX_CHILDREN)]];
    if (cursor) query.push(['start_cursor', cursor]);
    const res = await http.send(request('GET', firstPath, undefined, query));
    const page = res.body as { results?: Array<Record<string, unknown>>; has_more?: boolean; next_cursor?: string | null };
    for (const raw of page.results ?? []) {
      const type = String(raw.type);
      const block: ReadBlock = { id: String(raw.id), type, [type]: raw[type], has_children: raw.has_children === true };
      if (block.has_children && !SEPARATE_CONTENT.has(type)) block.children = await readBlockTree(http, `/v1/blocks/${enc(block.id)}/children`, signal);
      out.push(block);
    }
    cursor = page.has_more ? (page.next_cursor ?? null) : null;
  } while (cursor);
  return out;
}
