import { describe, expect, it } from 'vitest';
import { adfToMarkdown, markdownToAdf, plainText, type AdfNode } from '../plugins/jira/adf.ts';
import { adfProblem } from '../sandboxes/jira/adf-check.ts';

const text = (t: string, marks?: AdfNode['marks']): AdfNode => (marks ? { type: 'text', text: t, marks } : { type: 'text', text: t });
const para = (...content: AdfNode[]): AdfNode => ({ type: 'paragraph', content });

/** Every text node in a tree. */
function texts(node: AdfNode): AdfNode[] {
  return node.type === 'text' ? [node] : (node.content ?? []).flatMap(texts);
}

describe('markdownToAdf', () => {
  it('turns plain text into paragraphs, with a hardBreak for a single newline', () => {
    expect(markdownToAdf('first line\nsecond line\n\nnext paragraph')).toEqual({
      type: 'doc',
      version: 1,
      content: [para(text('first line'), { type: 'hardBreak' }, text('second line')), para(text('next paragraph'))],
    });
  });

  it('maps headings and inline marks', () => {
    const doc = markdownToAdf('## Plan\n\nSome **bold**, *italic*, ~~gone~~ and `code` with [a link](https://example.com/x).');
    expect(doc.content[0]).toEqual({ type: 'heading', attrs: { level: 2 }, content: [text('Plan')] });
    expect(doc.content[1].content).toEqual([
      text('Some '),
      text('bold', [{ type: 'strong' }]),
      text(', '),
      text('italic', [{ type: 'em' }]),
      text(', '),
      text('gone', [{ type: 'strike' }]),
      text(' and '),
      text('code', [{ type: 'code' }]),
      text(' with '),
      text('a link', [{ type: 'link', attrs: { href: 'https://example.com/x' } }]),
      text('.'),
    ]);
  });

  it('nests lists and keeps the start number of ordered lists', () => {
    const doc = markdownToAdf('- one\n  - one.a\n- two\n\n3. third\n4. fourth');
    expect(doc.content[0]).toEqual({
      type: 'bulletList',
      content: [
        { type: 'listItem', content: [para(text('one')), { type: 'bulletList', content: [{ type: 'listItem', content: [para(text('one.a'))] }] }] },
        { type: 'listItem', content: [para(text('two'))] },
      ],
    });
    expect(doc.content[1]).toMatchObject({ type: 'orderedList', attrs: { order: 3 } });
    expect(markdownToAdf('1. a\n2. b').content[0].attrs).toBeUndefined();
  });

  it('keeps code blocks with their language, blockquotes and rules', () => {
    const doc = markdownToAdf('```ts\nconst a = 1;\n\nconst b = 2;\n```\n\n> quoted\n\n---');
    expect(doc.content).toEqual([
      { type: 'codeBlock', attrs: { language: 'ts' }, content: [text('const a = 1;\n\nconst b = 2;')] },
      { type: 'blockquote', content: [para(text('quoted'))] },
      { type: 'rule' },
    ]);
  });

  it('never emits an empty text node and always yields valid ADF', () => {
    const inputs = [
      '',
      '   ',
      '```\n```',
      '#',
      '- ',
      '[](https://x.example)',
      '**`both`**',
      '<div>raw html</div>',
      '> ',
      '| a |\n|---|\n|   |',
      '- [ ] task\n- [x] done',
      'a  \nb',
      '\n\n\n',
    ];
    for (const input of inputs) {
      const doc = markdownToAdf(input);
      expect(adfProblem(doc), JSON.stringify(input)).toBeNull();
      for (const node of texts({ type: 'doc', content: doc.content })) expect(node.text).not.toBe('');
    }
  });

  it('keeps raw HTML as literal text instead of dropping it', () => {
    expect(markdownToAdf('<div>kept</div>').content).toEqual([para(text('<div>kept</div>'))]);
    expect(plainText(markdownToAdf('a <b>c</b>'))).toBe('a <b>c</b>');
  });

  it('drops marks that ADF does not allow next to code', () => {
    const [node] = markdownToAdf('**`x`**').content[0].content!;
    expect(node).toEqual(text('x', [{ type: 'code' }]));
  });

  it('turns a table into tableHeader and tableCell rows', () => {
    const doc = markdownToAdf('| a | b |\n| --- | --- |\n| 1 | 2 |');
    expect(doc.content[0].content!.map((row) => row.content!.map((c) => c.type))).toEqual([
      ['tableHeader', 'tableHeader'],
      ['tableCell', 'tableCell'],
    ]);
  });
});

describe('adfToMarkdown', () => {
  it('renders marks, links and hard breaks', () => {
    const doc = {
      type: 'doc',
      version: 1,
      content: [
        para(text('see '), text('docs', [{ type: 'link', attrs: { href: 'https://d.example' } }, { type: 'strong' }]), { type: 'hardBreak' }, text('done')),
      ],
    };
    expect(adfToMarkdown(doc)).toBe('see [**docs**](https://d.example)\ndone');
  });

  it('keeps marks shared by neighbouring text nodes open and never puts spaces inside delimiters', () => {
    const doc = { type: 'doc', version: 1, content: [para(text('a ', [{ type: 'strong' }]), text('b', [{ type: 'strong' }, { type: 'em' }]), text(' c'))] };
    expect(adfToMarkdown(doc)).toBe('**a *b*** c');
    expect(markdownToAdf(adfToMarkdown(doc)).content).toEqual(doc.content);
  });

  it('escapes literal markdown characters so they stay literal', () => {
    const doc = { type: 'doc', version: 1, content: [para(text('# not a heading *nor* [link](x) snake_case _x_'))] };
    const md = adfToMarkdown(doc);
    expect(md).toBe('\\# not a heading \\*nor\\* [link\\](x) snake_case \\_x\\_');
    expect(markdownToAdf(md).content).toEqual(doc.content);
  });

  it('falls back to the text of unknown and inline attribute nodes', () => {
    const doc = {
      type: 'doc',
      version: 1,
      content: [
        para(text('hi '), { type: 'mention', attrs: { id: 'abc', text: '@Alice Admin' } }, text(' '), {
          type: 'emoji',
          attrs: { shortName: ':smile:', text: '😄' },
        }),
        { type: 'panel', attrs: { panelType: 'info' }, content: [para(text('inside panel'))] },
        { type: 'someFutureNode', content: [text('future text')] },
        para({ type: 'status', attrs: { text: 'IN REVIEW' } }, text(' '), { type: 'inlineCard', attrs: { url: 'https://card.example' } }),
      ],
    };
    expect(adfToMarkdown(doc)).toBe('hi @Alice Admin 😄\n\ninside panel\n\nfuture text\n\nIN REVIEW https://card.example');
  });

  it('tolerates values that are not documents', () => {
    expect(adfToMarkdown(null)).toBe('');
    expect(adfToMarkdown(42)).toBe('');
    expect(adfToMarkdown('already text')).toBe('already text');
    expect(adfToMarkdown({ type: 'doc' })).toBe('');
    expect(adfToMarkdown({ type: 'doc', version: 1, content: [null, { nope: true }, para(text('ok'))] })).toBe('ok');
  });

  it('renders task lists from Jira as checkbox items', () => {
    const doc = {
      type: 'doc',
      version: 1,
      content: [
        {
          type: 'taskList',
          attrs: { localId: 't' },
          content: [
            { type: 'taskItem', attrs: { localId: '1', state: 'DONE' }, content: [text('ship it')] },
            { type: 'taskItem', attrs: { localId: '2', state: 'TODO' }, content: [text('announce')] },
          ],
        },
      ],
    };
    expect(adfToMarkdown(doc)).toBe('- [x] ship it\n- [ ] announce');
  });
});

describe('round trip', () => {
  const fixtures = [
    'Just one line.',
    'Line one\nline two\n\nSecond paragraph.',
    '# Title\n\n## Subtitle\n\nText with **bold**, *em*, ~~strike~~, `code` and [a link](https://example.com/a_b).',
    '- one\n- two\n  - two.a\n  - two.b\n- three',
    '5. five\n6. six\n   1. nested',
    '1. first\n\n   more about first\n2. second',
    '```python\nprint("hi")\n\nprint("bye")\n```',
    '> quoted **text**\n> second line\n\n---\n\nafter the rule',
    '| a | b |\n| --- | --- |\n| 1 | 2 |',
    '- [ ] open task\n- [x] closed task',
  ];

  it.each(fixtures)('markdown -> ADF -> markdown keeps %j', (md) => {
    const doc = markdownToAdf(md);
    expect(adfProblem(doc)).toBeNull();
    expect(adfToMarkdown(doc)).toBe(md);
  });

  it.each(fixtures)('ADF -> markdown -> ADF keeps the document of %j', (md) => {
    const doc = markdownToAdf(md);
    expect(markdownToAdf(adfToMarkdown(doc))).toEqual(doc);
  });
});
