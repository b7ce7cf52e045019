// The dashboard's generated forms (runtime/dashboard/forms.ts), on their own: account fields from a
// provider.yaml's account section, tool parameters from a JSON Schema, new and on edit; the catalog's
// descriptions as the pages render them (markdown.ts).
import { describe, expect, it } from 'vitest';
import { accountFields, patternMessage, schemaFields } from '../runtime/dashboard/forms.ts';
import { markdownBlock, markdownInline } from '../runtime/dashboard/markdown.ts';
import type { AccountFieldSpec } from '../runtime/toolspec/types.ts';

const ACCOUNT: AccountFieldSpec[] = [
  { name: 'site_url', title: 'Site URL', description: '  Your site.  ', format: 'url', pattern: '^https://', pattern_message: 'must start with https://' },
  { name: 'email', title: 'E-mail', format: 'email' },
  { name: 'api_token', title: 'API token', secret: true },
  { name: 'region', title: 'Region', default: 'eu' },
  { name: 'team', title: 'Team', required: false },
];

describe('accountFields', () => {
  it('makes a new account form: input types by format, secrets as passwords, defaults filled in', () => {
    const fields = accountFields(ACCOUNT, 'new tracker');
    expect(fields.map((f) => [f.id, f.inputType, f.required, f.value])).toEqual([
      ['new-tracker-site_url', 'url', true, undefined],
      ['new-tracker-email', 'email', true, undefined],
      ['new-tracker-api_token', 'password', true, undefined],
      ['new-tracker-region', 'text', false, 'eu'],
      ['new-tracker-team', 'text', false, undefined],
    ]);
    expect(fields[0]).toMatchObject({
      name: 'site_url',
      key: 'site_url',
      label: 'Site URL',
      description: 'Your site.',
      pattern: '^https://',
      patternMessage: 'Site URL must start with https://',
    });
    expect(fields[2]).toMatchObject({ secret: true, placeholder: undefined });
    expect(fields[3].placeholder).toBe('eu');
  });

  it('on edit shows the saved values but never a secret, which may be left empty to keep', () => {
    const fields = accountFields(ACCOUNT, 'edit', { site_url: 'https://x.example', email: 'a@example.com', api_token: 'should never show', region: 'us' });
    expect(fields.map((f) => [f.name, f.value, f.required])).toEqual([
      ['site_url', 'https://x.example', true],
      ['email', 'a@example.com', true],
      ['api_token', undefined, false],
      ['region', 'us', false],
      ['team', undefined, false],
    ]);
    expect(fields[2].placeholder).toBe('Saved — leave empty to keep');
    expect(JSON.stringify(fields)).not.toContain('should never show');
  });
});

describe('schemaFields', () => {
  const schema = {
    type: 'object',
    properties: {
      jql: { type: 'string', description: 'A JQL query.' },
      max_results: { type: 'integer', minimum: 1, maximum: 100, default: 50 },
      ratio: { type: 'number' },
      order: { type: 'string', enum: ['asc', 'desc'] },
      archived: { type: 'boolean' },
      labels: { type: 'array', items: { type: 'string' } },
      filter: { type: 'object' },
      either: { anyOf: [{ type: 'string' }, { type: 'null' }] },
    },
  };

  it('makes one optional field per parameter, typed for the browser to send the right JSON', () => {
    const fields = schemaFields(schema, 'defaults', 'tool');
    expect(fields.map((f) => [f.name, f.key, f.id, f.control, f.inputType, f.valueType, f.required])).toEqual([
      ['defaults.jql', 'jql', 'tool-jql', 'input', 'text', 'string', false],
      ['defaults.max_results', 'max_results', 'tool-max_results', 'input', 'number', 'integer', false],
      ['defaults.ratio', 'ratio', 'tool-ratio', 'input', 'number', 'number', false],
      ['defaults.order', 'order', 'tool-order', 'select', undefined, 'string', false],
      ['defaults.archived', 'archived', 'tool-archived', 'select', undefined, 'boolean', false],
      ['defaults.labels', 'labels', 'tool-labels', 'textarea', undefined, 'lines', false],
      ['defaults.filter', 'filter', 'tool-filter', 'textarea', undefined, 'json', false],
      ['defaults.either', 'either', 'tool-either', 'textarea', undefined, 'json', false],
    ]);
    expect(fields[0].description).toBe('A JQL query.');
    expect(fields[1]).toMatchObject({ min: 1, max: 100, step: '1', description: 'Range 1–100. Default: 50.' });
    expect(fields[2].step).toBe('any');
    expect(fields[3].options).toEqual([
      { value: '', label: '(not set)', selected: true },
      { value: 'asc', label: 'asc', selected: false },
      { value: 'desc', label: 'desc', selected: false },
    ]);
    expect(fields[5].placeholder).toBe('One value per line');
    expect(fields[6].placeholder).toBe('JSON, e.g. {}');
  });

  it('fills in the current values as the controls show them', () => {
    const fields = schemaFields(schema, 'defaults', 'tool', {
      jql: 'project = X',
      max_results: 20,
      order: 'desc',
      archived: false,
      labels: ['a', 'b'],
      filter: { status: 'open' },
    });
    const byKey = Object.fromEntries(fields.map((f) => [f.key, f]));
    expect(byKey.jql.value).toBe('project = X');
    expect(byKey.max_results.value).toBe('20');
    expect(byKey.order.options?.find((o) => o.selected)?.value).toBe('desc');
    expect(byKey.archived.options?.find((o) => o.selected)?.value).toBe('false');
    expect(byKey.labels.value).toBe('a\nb');
    expect(byKey.filter.value).toBe('{\n  "status": "open"\n}');
    expect(byKey.ratio.value).toBeUndefined();
  });
});

describe('hints and messages', () => {
  it('says a range and a default once: not again when the description gives them', () => {
    const fields = schemaFields(
      {
        properties: {
          max_results: { type: 'integer', minimum: 1, maximum: 1000, default: 50, description: 'Most issues to return (1-1000, default 50)' },
          offset: { type: 'integer', minimum: 0, description: 'Rows to skip' },
          page: { type: 'integer', maximum: 9, default: 1 },
          mode: { type: 'string', default: 'fast', description: 'How to search' },
        },
        required: ['mode'],
      },
      'arguments',
      'try',
      {},
      { required: true },
    );
    expect(fields.map((f) => [f.key, f.description, f.required])).toEqual([
      ['max_results', 'Most issues to return (1-1000, default 50)', false],
      ['offset', 'Rows to skip. At least 0.', false],
      ['page', 'At most 9. Default: 1.', false],
      ['mode', 'How to search. Default: "fast".', true],
    ]);
  });

  it("puts a pattern's message after the field's label without running into it", () => {
    expect(patternMessage('Integration Token', 'must be a Notion internal integration token')).toBe(
      'Integration Token must be a Notion internal integration token',
    );
    expect(patternMessage('Key', 'Use a legacy anon/service_role key')).toBe('Key: Use a legacy anon/service_role key');
  });
});

describe('descriptions in the pages (markdown)', () => {
  it('escapes everything and keeps only inline code and written-out safe links as markup', () => {
    const text = 'Use `a<b>` and [the docs](https://example.com/x?a=1&b="2") <img src=x onerror=alert(1)> <script>alert(1)</script>';
    expect(markdownBlock(text)).toBe(
      '<p>Use <code>a&#60;b&#62;</code> and <a href="https://example.com/x?a=1&#38;b=&#34;2&#34;" rel="noopener noreferrer">the docs</a> &#60;img src=x onerror=alert(1)&#62; &#60;script&#62;alert(1)&#60;/script&#62;</p>',
    );
    for (const link of ['[x](javascript:alert(1))', '[x](data:text/html,hi)', '[x](vbscript:msgbox)', '[x](/relative)']) expect(markdownInline(link)).toBe('x');
  });

  it('leaves asterisks, underscores and bare URLs as written, and keeps paragraphs and lists', () => {
    expect(markdownInline('e.g. "*milk*" or * for all, snake_case_name, https://abc.supabase.co')).toBe(
      'e.g. &#34;*milk*&#34; or * for all, snake_case_name, https://abc.supabase.co',
    );
    expect(markdownBlock('One.\n\n- a `b`\n- c')).toBe('<p>One.</p><ul><li>a <code>b</code></li><li>c</li></ul>');
    expect(markdownInline('One.\n\nTwo.')).toBe('One. Two.');
  });
});
