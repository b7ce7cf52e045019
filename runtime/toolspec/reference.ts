// The reference of the spec language (docs/spec-language.md), generated from its JSON Schemas (every key, its
// values, its description) and the template helper table (every helper, with an example the test renders), so
// it cannot say what the runtime does not do. `npm run generate:spec` writes it; test/spec-reference.test.ts fails
// when the committed file differs from what this writes.
import { HELPERS } from '../template/template.ts';
import { EACH_KEYS } from '../template/tree.ts';
import { LANGUAGE_VERSION, MAX_DESCRIPTION_LENGTH, exchangesSchema, providerSchema, toolSchema } from './language.ts';

type Schema = Record<string, unknown> & {
  $ref?: string;
  description?: string;
  properties?: Record<string, Schema>;
  required?: string[];
  definitions?: Record<string, Schema>;
};

const FILES = { 'tool.schema.json': toolSchema, 'provider.schema.json': providerSchema, 'exchanges.schema.json': exchangesSchema } as unknown as Record<
  string,
  Schema
>;

/** Definitions that read as a kind of value rather than as a table of keys. */
const VALUE_WORDS: Record<string, string> = {
  version: `${LANGUAGE_VERSION}`,
  template: '[template](#templates)',
  templateTree: '[template tree](#templates)',
  pointer: 'JSON pointer',
  pointerOrTemplate: 'JSON pointer or [template](#templates)',
  objectSchema: 'JSON Schema (type object)',
};

interface Named {
  file: string;
  name: string;
  schema: Schema;
}

/** The sections of definitions, in the order they are first met. */
class Definitions {
  readonly order: Named[] = [];

  resolve(ref: string, from: string): Named {
    const [file, pointer] = ref.split('#');
    const inFile = file || from;
    const name = pointer.split('/').pop()!;
    const schema = FILES[inFile].definitions![name];
    let named = this.order.find((d) => d.file === inFile && d.name === name);
    if (!named && !(name in VALUE_WORDS)) this.order.push((named = { file: inFile, name, schema }));
    return named ?? { file: inFile, name, schema };
  }
}

const titleOf = (name: string) => name.replace(/[A-Z]/g, (c) => ` ${c.toLowerCase()}`).replace(/^./, (c) => c.toUpperCase());
const fileWord = (file: string) => file.replace('.schema.json', '');
/** A definition's heading, and its anchor as Markdown renderers make it from the heading. */
const headingOf = (file: string, name: string) => `${titleOf(name)} (${fileWord(file)})`;
const anchorOf = (file: string, name: string) => headingOf(file, name).toLowerCase().replace(/[()]/g, '').replace(/ /g, '-');
/** Text for a table cell: pipes escaped, and angle brackets, which Markdown would take for HTML. */
const cell = (text: string) => text.replace(/\|/g, '\\|').replace(/\n/g, ' ').replace(/</g, '&lt;').replace(/>/g, '&gt;');
const code = (value: unknown) => `\`${typeof value === 'string' ? value : JSON.stringify(value)}\``;

/** The value column: the kind of value, its constraints, required and default. */
function describe(schema: Schema, file: string, defs: Definitions): string {
  if (schema.$ref) {
    const target = defs.resolve(schema.$ref, file);
    return VALUE_WORDS[target.name] ?? `[${titleOf(target.name)}](#${anchorOf(target.file, target.name)})`;
  }
  if ('const' in schema) return code(schema.const);
  if (Array.isArray(schema.enum)) return `one of ${schema.enum.map(code).join(', ')}`;
  for (const key of ['oneOf', 'anyOf'] as const) {
    if (Array.isArray(schema[key])) {
      return (schema[key] as Schema[])
        .map((s) => describe(s, file, defs))
        .map((text, _, all) => (all.length > 1 && text.includes(', ') ? `(${text})` : text))
        .join(' or ');
    }
  }
  const types = Array.isArray(schema.type) ? (schema.type as string[]) : schema.type ? [schema.type as string] : [];
  const parts: string[] = [];
  if (types.includes('array') && schema.items) parts.push(`list of ${describe(schema.items as Schema, file, defs)}`);
  else if (types.includes('object') && schema.additionalProperties && typeof schema.additionalProperties === 'object') {
    parts.push(`map of names to ${describe(schema.additionalProperties as Schema, file, defs)}`);
  } else if (types.length) parts.push(types.join(' or '));
  else parts.push('any JSON value');
  const limits: string[] = [];
  if (schema.pattern) limits.push(`matching ${code(schema.pattern)}`);
  if (schema.minLength !== undefined) limits.push(`at least ${schema.minLength as number} character${schema.minLength === 1 ? '' : 's'}`);
  if (schema.maxLength !== undefined) limits.push(`at most ${(schema.maxLength as number).toLocaleString('en')} characters`);
  if (schema.minimum !== undefined) limits.push(`>= ${schema.minimum as number}`);
  if (schema.maximum !== undefined) limits.push(`<= ${schema.maximum as number}`);
  if (schema.minItems !== undefined) limits.push(`at least ${schema.minItems as number} item${schema.minItems === 1 ? '' : 's'}`);
  if (schema.minProperties === 1 && schema.maxProperties === 1) limits.push('exactly one key');
  return [parts.join(''), ...limits].join(', ');
}

/** The rows of an object's keys: nested objects written inline are expanded as `key.child` and `key[].child`. */
function rows(schema: Schema, file: string, defs: Definitions, prefix = ''): string[] {
  const out: string[] = [];
  const required = new Set(schema.required ?? []);
  for (const [key, value] of Object.entries(schema.properties ?? {})) {
    const target = value.$ref ? defs.resolve(value.$ref, file).schema : value;
    const description = value.description ?? target.description ?? '';
    let kind = describe(value, file, defs);
    if (required.has(key)) kind += ', **required**';
    if (value.default !== undefined) kind += `, default ${code(value.default)}`;
    out.push(`| \`${prefix}${key}\` | ${cell(kind)} | ${cell(description)} |`);
    if (!value.$ref && value.properties) out.push(...rows(value, file, defs, `${prefix}${key}.`));
    const items = value.items as Schema | undefined;
    if (!value.$ref && items && !items.$ref && items.properties) out.push(...rows(items, file, defs, `${prefix}${key}[].`));
  }
  return out;
}

const TABLE_HEAD = ['| key | value | what it means |', '|---|---|---|'];

function section(heading: string, schema: Schema, file: string, defs: Definitions, where?: string): string[] {
  return [
    heading,
    '',
    ...(where ? [where, ''] : []),
    ...(schema.description ? [cell(schema.description), ''] : []),
    ...TABLE_HEAD,
    ...rows(schema, file, defs),
    '',
  ];
}

function helperTable(): string[] {
  const lines = ['| helper | what it gives | example | with | gives |', '|---|---|---|---|---|'];
  for (const [name, h] of Object.entries(HELPERS)) {
    lines.push(
      `| \`${h.usage}\` | ${cell(h.does)} | \`${cell(h.example.template)}\` | ${cell(code({ args: h.example.args ?? {} }))} | ${cell(`\`${JSON.stringify(h.example.gives)}\``)} |`,
    );
    if (!h.usage.startsWith(name)) throw new Error(`the usage of helper ${name} does not start with its name`);
  }
  return lines;
}

/** The whole reference, as docs/spec-language.md holds it. */
export function languageReference(): string {
  const defs = new Definitions();
  const files: Array<[string, string, string]> = [
    ['provider.schema.json', 'Provider (`provider.yaml`)', "In `tool-specs/<id>/provider.yaml`, the folder named by the provider's id."],
    ['tool.schema.json', 'Tool (`<tool>.yaml`)', "One YAML file per tool in its provider's folder, `provider:` naming that folder."],
    ['exchanges.schema.json', 'Exchanges (`<tool>.exchanges.yaml`)', "Beside the tool's file: `get_issue.yaml` -> `get_issue.exchanges.yaml`."],
  ];
  const body: string[] = [];
  for (const [file, heading, where] of files) body.push(...section(`## ${heading}`, FILES[file], file, defs, where));
  // Definitions are met while writing the files' tables, and while writing each other's.
  for (let i = 0; i < defs.order.length; i++) {
    const d = defs.order[i];
    body.push(...section(`### ${headingOf(d.file, d.name)}`, d.schema, d.file, defs));
  }
  return [
    '# The spec language',
    '',
    '<!-- Generated by `npm run generate:spec` from runtime/toolspec/schemas/ and the helper table of runtime/template/template.ts: edit those, not this file. -->',
    '',
    `Providers and tools are YAML files checked against the JSON Schemas of \`runtime/toolspec/schemas/\` (put \`# yaml-language-server: $schema=<relative path to the schema>\` on the first line for completion in editors), then by the loader's own checks. \`npm run check:specs [-- <dir>]\` reports every problem of every file at once as \`file:line:col json-path message\`; \`--exchanges\` also runs the exchanges. This is language version ${LANGUAGE_VERSION}; descriptions (of a tool, and inside its input and output) have at most ${MAX_DESCRIPTION_LENGTH.toLocaleString('en')} characters.`,
    '',
    ...body,
    '## Templates',
    '',
    "Templates are Handlebars expressions in leaf strings: `path`, `query`, `headers`, `body`, `when`, the response `map`, and error rules' `message`, `hint`, `code`, `detail` and `when`. A leaf that is exactly one expression keeps its JSON type (a number stays a number, a list a list); in a leaf with text around expressions each value is written as text (JSON for objects), and a missing value there is an error. In `path`, expression values are URL-encoded. A single-expression leaf that gives nothing is left out of its object or list, so an optional argument that was not given simply does not appear. No blocks, partials, `this`, `../` or `@data`, no prototype access; what templates cannot do belongs in a plugin.",
    '',
    '| variable | what it is | where |',
    '|---|---|---|',
    "| `args.<name>` | the call's arguments, with the input schema's defaults | everywhere in a tool |",
    "| `account.<field>` | the account's non-secret fields (a missing field with a default: its default) | everywhere; secrets only in provider.yaml `auth` |",
    "| `steps.<name>` | an earlier step's answer: `status`, `headers`, `body` (and, paginated, `items`, `has_more`, `next_cursor`, `pages`) | later steps, the response map, error rules |",
    '| `response` | the last answer, as `steps.<name>` | the response map; in error rules, the failing answer |',
    `| \`item\` | the item of a list mapped item by item | inside \`${EACH_KEYS[1]}\` and \`${EACH_KEYS[2]}\` |`,
    '',
    `A list mapped item by item is an object \`{${EACH_KEYS.join(', ')}}\` anywhere in a template tree: \`${EACH_KEYS[0]}\` is one expression giving the list, \`${EACH_KEYS[1]}\` keeps the items for which it is true, \`${EACH_KEYS[2]}\` makes each kept item (default: the item); an absent list leaves the key out.`,
    '',
    '```yaml',
    'issues:',
    '  $each: "{{response.items}}"',
    '  $filter: "{{not item.pull_request}}"',
    '  $map: { number: "{{item.number}}", labels: { $each: "{{item.labels}}", $map: "{{item.name}}" } }',
    '```',
    '',
    '### Helpers',
    '',
    ...helperTable(),
    '',
  ].join('\n');
}
