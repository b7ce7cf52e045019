// Page property values for create_page: Notion's own write shapes pass through; the bare value shapes of
// the service spec (select = {name}, date = {start}, ...) and plain strings are wrapped by the schema type.
import { ToolError } from '../../runtime/plugin-api.ts';
import { MAX_TEXT_LENGTH } from './markdown.ts';

/** One property of a data source schema, as GET /v1/data_sources/{id} answers it (keyed by name). */
export interface SchemaProperty {
  id: string;
  name?: string;
  type: string;
}

export type Schema = Record<string, SchemaProperty>;

type Json = Record<string, unknown>;
const isObject = (v: unknown): v is Json => v !== null && typeof v === 'object' && !Array.isArray(v);

/** Plain text as request rich text, cut at Notion's 2,000-character limit. */
export function plainRichText(text: string): Array<{ text: { content: string } }> {
  const items: Array<{ text: { content: string } }> = [];
  for (let i = 0; i < text.length; i += MAX_TEXT_LENGTH) items.push({ text: { content: text.slice(i, i + MAX_TEXT_LENGTH) } });
  return items.length ? items : [{ text: { content: '' } }];
}

const named = (v: unknown) => (typeof v === 'string' ? { name: v } : v);

/** A bare value -> the value under the type key, by the property's type. */
function wrapValue(type: string, value: unknown): unknown {
  switch (type) {
    case 'title':
    case 'rich_text':
      return typeof value === 'string' ? plainRichText(value) : value;
    case 'select':
    case 'status':
      return named(value);
    case 'multi_select':
      return Array.isArray(value) ? value.map(named) : [named(value)];
    case 'date':
      return typeof value === 'string' ? { start: value } : value;
    case 'people':
    case 'relation':
      return Array.isArray(value) ? value.map((v) => (typeof v === 'string' ? { id: v } : v)) : value;
    default:
      return value;
  }
}

/** The name of the schema's title property (Notion's title property always has the id "title"). */
export function titlePropertyName(schema: Schema): string {
  return Object.entries(schema).find(([, p]) => p.type === 'title')?.[0] ?? 'title';
}

/**
 * The `properties` body of a new page: the title under the title property, then the caller's values,
 * each in Notion's write shape. Without a schema (page parent) only the title is known.
 */
export function pageProperties(title: string, values: Json | undefined, schema: Schema | undefined): Json {
  const titleKey = schema ? titlePropertyName(schema) : 'title';
  const out: Json = { [titleKey]: { title: plainRichText(title) } };
  for (const [key, value] of Object.entries(values ?? {})) {
    const prop = schema?.[key] ?? Object.values(schema ?? {}).find((p) => p.id === key);
    if (key === titleKey || prop?.type === 'title') {
      throw new ToolError('invalid_arguments', `"properties.${key}" is the title property: give the page title in "title"`, { refund: true });
    }
    // Unknown names go as given: Notion answers which property does not exist.
    if (!prop || (isObject(value) && prop.type in value)) out[key] = value;
    else out[key] = { [prop.type]: wrapValue(prop.type, value) };
  }
  return out;
}
