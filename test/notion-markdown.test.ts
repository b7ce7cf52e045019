import { readdirSync, readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  blocksToMarkdown,
  markdownToBlocks,
  MAX_TEXT_LENGTH,
  notionLanguage,
  type NotionBlock,
  type NotionBlockWithChildren,
  type RichText,
} from '../plugins/notion/markdown.ts';
import { startNotionSandbox, type NotionSandbox } from '../sandboxes/notion/notion-sandbox.ts';

const fixtureDir = new URL('./fixtures/markdown/', import.meta.url);
const fixtures = readdirSync(fixtureDir)
  .filter((f) => f.endsWith('.md'))
  .map((name) => ({ name, markdown: readFileSync(new URL(name, fixtureDir), 'utf8').trimEnd() }));

const body = (block: NotionBlock) => block[block.type] as { rich_text: RichText[]; children?: NotionBlock[]; language?: string; checked?: boolean };
const contents = (block: NotionBlock) => body(block).rich_text.map((t) => t.text.content);

describe('markdownToBlocks', () => {
  it('maps headings, paragraphs and inline styles to Notion rich text', () => {
    const [h1, h3, para] = markdownToBlocks('# Title\n\n#### Deep\n\nPlain **bold *both*** `code` ~~gone~~ [site](https://example.com)');
    expect(h1.type).toBe('heading_1');
    expect(h3.type).toBe('heading_3');
    const runs = body(para).rich_text;
    expect(
      runs.map((r) => [r.text.content, r.annotations.bold, r.annotations.italic, r.annotations.code, r.annotations.strikethrough, r.text.link?.url ?? null]),
    ).toEqual([
      ['Plain ', false, false, false, false, null],
      ['bold ', true, false, false, false, null],
      ['both', true, true, false, false, null],
      [' ', false, false, false, false, null],
      ['code', false, false, true, false, null],
      [' ', false, false, false, false, null],
      ['gone', false, false, false, true, null],
      [' ', false, false, false, false, null],
      ['site', false, false, false, false, 'https://example.com'],
    ]);
  });

  it('nests list items, to-dos and their children under `children`', () => {
    const blocks = markdownToBlocks('- a\n  - b\n    - c\n- [x] done\n- [ ] open\n\n1. one\n2. two');
    expect(blocks.map((b) => b.type)).toEqual(['bulleted_list_item', 'to_do', 'to_do', 'numbered_list_item', 'numbered_list_item']);
    const b = body(blocks[0]).children![0];
    expect(contents(b)).toEqual(['b']);
    expect(contents(body(b).children![0])).toEqual(['c']);
    expect([body(blocks[1]).checked, body(blocks[2]).checked]).toEqual([true, false]);
    expect(body(blocks[3]).children).toBeUndefined();
  });

  it('maps fence names to Notion languages, unknown ones to plain text', () => {
    const [ts, rust, weird, none] = markdownToBlocks('```ts\nx\n```\n\n```rust\ny\n```\n\n```brainfart\nz\n```\n\n```\nw\n```');
    expect([ts, rust, weird, none].map((b) => body(b).language)).toEqual(['typescript', 'rust', 'plain text', 'plain text']);
    expect(notionLanguage('C++')).toBe('c++');
    expect(notionLanguage('sh')).toBe('shell');
    expect(notionLanguage('yml')).toBe('yaml');
  });

  it('splits text so that no rich-text object exceeds 2,000 characters', () => {
    const long = 'x'.repeat(4500);
    const [para, code] = markdownToBlocks(`${long} **${'b'.repeat(2500)}**\n\n\`\`\`\n${long}\n\`\`\``);
    const lengths = body(para).rich_text.map((r) => r.text.content.length);
    expect(Math.max(...lengths)).toBeLessThanOrEqual(MAX_TEXT_LENGTH);
    expect(lengths.reduce((a, b) => a + b, 0)).toBe(4500 + 1 + 2500);
    expect(
      body(para)
        .rich_text.filter((r) => r.annotations.bold)
        .map((r) => r.text.content.length),
    ).toEqual([2000, 500]);
    expect(body(code).rich_text.map((r) => r.text.content.length)).toEqual([2000, 2000, 500]);
  });

  it('does not cut an emoji in half at the limit', () => {
    const text = `${'a'.repeat(1999)}😀tail`;
    const runs = body(markdownToBlocks(text)[0]).rich_text.map((r) => r.text.content);
    expect(runs).toEqual(['a'.repeat(1999), '😀tail']);
  });

  it('turns quotes and dividers into quote and divider blocks', () => {
    const blocks = markdownToBlocks('> wise words\n\n---\n\nafter');
    expect(blocks.map((b) => b.type)).toEqual(['quote', 'divider', 'paragraph']);
    expect(contents(blocks[0])).toEqual(['wise words']);
  });
});

describe('blocksToMarkdown', () => {
  it('renders blocks as read from the API, children under `children`', () => {
    const rich = (content: string, extra: Partial<RichText['annotations']> = {}) => ({
      type: 'text',
      text: { content, link: null },
      plain_text: content,
      href: null,
      annotations: { bold: false, italic: false, strikethrough: false, underline: false, code: false, color: 'default', ...extra },
    });
    const blocks: NotionBlockWithChildren[] = [
      { type: 'heading_2', heading_2: { rich_text: [rich('Plan')] } },
      {
        type: 'bulleted_list_item',
        bulleted_list_item: { rich_text: [rich('parent')] },
        children: [{ type: 'bulleted_list_item', bulleted_list_item: { rich_text: [rich('child', { bold: true })] } }],
      },
      { type: 'toggle', toggle: { rich_text: [rich('More')] }, children: [{ type: 'paragraph', paragraph: { rich_text: [rich('hidden')] } }] },
      { type: 'child_page', id: '11111111-2222-3333-4444-555555555555', child_page: { title: 'Sub page' } },
      { type: 'code', code: { rich_text: [rich('a ``` b')], language: 'c++' } },
    ];
    expect(blocksToMarkdown(blocks)).toBe(
      '## Plan\n\n- parent\n  - **child**\n\n<details>\n<summary>More</summary>\n\nhidden\n\n</details>\n\n' +
        '[Sub page](https://www.notion.so/11111111222233334444555555555555)\n\n````cpp\na ``` b\n````',
    );
  });

  it('keeps spaces outside emphasis markers', () => {
    const md = blocksToMarkdown(markdownToBlocks('say **hello** world'));
    expect(md).toBe('say **hello** world');
  });
});

describe('markdown round trip', () => {
  it.each(fixtures)('$name survives markdown → blocks → markdown', ({ markdown }) => {
    expect(blocksToMarkdown(markdownToBlocks(markdown))).toBe(markdown);
  });
});

describe('markdown through the Notion sandbox', () => {
  let sim: NotionSandbox;
  beforeAll(async () => {
    sim = await startNotionSandbox();
  });
  afterAll(() => sim.close());

  const call = async (method: string, path: string, payload?: unknown) => {
    const res = await fetch(`${sim.url}/v1${path}`, {
      method,
      headers: { authorization: `Bearer ${sim.token}`, 'notion-version': '2025-09-03', 'content-type': 'application/json' },
      body: payload === undefined ? undefined : JSON.stringify(payload),
    });
    const json = await res.json();
    if (res.status !== 200) throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(json)}`);
    return json;
  };

  /** Appends one level per request, as a client must past Notion's two-level nesting limit. */
  async function appendTree(parentId: string, blocks: NotionBlock[]): Promise<void> {
    const flat = blocks.map((b) => ({ ...b, [b.type]: { ...body(b), children: undefined } }));
    const { results } = await call('PATCH', `/blocks/${parentId}/children`, { children: flat });
    for (const [i, b] of blocks.entries()) if (body(b).children) await appendTree(results[i].id, body(b).children!);
  }

  async function readTree(id: string): Promise<NotionBlockWithChildren[]> {
    const { results } = await call('GET', `/blocks/${id}/children?page_size=100`);
    for (const b of results) if (b.has_children) b.children = await readTree(b.id);
    return results;
  }

  it.each(fixtures)('$name is accepted by the API and reads back the same', async ({ markdown }) => {
    const page = await call('POST', '/pages', {
      parent: { page_id: sim.ids.welcomePage },
      properties: { title: { title: [{ text: { content: 'Round trip' } }] } },
    });
    await appendTree(page.id, markdownToBlocks(markdown));
    expect(blocksToMarkdown(await readTree(page.id))).toBe(markdown);
  });
});
