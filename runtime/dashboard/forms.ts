// Form fields generated from what the catalog declares: a provider's account fields (provider.yaml) and a
// tool's JSON Schema parameters. A provider or tool dropped in as YAML gets its form with no page code.
import type { AccountFieldSpec } from '../toolspec/types.ts';

/** How the browser turns a control's text into the JSON value it sends (see assets/app.js). */
export type ValueType = 'string' | 'number' | 'integer' | 'boolean' | 'json' | 'lines';

export interface Field {
  /** The JSON path of the value in the request body, dotted (`defaults.project_key`). */
  name: string;
  /** The parameter or field name as the API names it in its errors. */
  key: string;
  id: string;
  label: string;
  description?: string;
  control: 'input' | 'select' | 'textarea';
  inputType?: 'text' | 'password' | 'number' | 'url' | 'email';
  valueType: ValueType;
  required: boolean;
  value?: string;
  placeholder?: string;
  /** Checked in the browser with the same regular expression as the server, with this message. */
  pattern?: string;
  patternMessage?: string;
  min?: number;
  max?: number;
  step?: string;
  options?: Array<{ value: string; label: string; selected: boolean }>;
  secret?: boolean;
}

const idOf = (prefix: string, name: string) => `${prefix}-${name}`.replace(/[^A-Za-z0-9_-]/g, '-');

/** The add/edit form of an account kind. On edit, secrets stay empty ("leave empty to keep"). */
export function accountFields(fields: AccountFieldSpec[], prefix: string, current?: Record<string, unknown>): Field[] {
  return fields.map((f) => {
    const editing = current !== undefined;
    const value = f.secret ? undefined : typeof current?.[f.name] === 'string' ? (current[f.name] as string) : editing ? undefined : f.default;
    return {
      name: f.name,
      key: f.name,
      id: idOf(prefix, f.name),
      label: f.title,
      description: f.description?.trim(),
      control: 'input',
      inputType: f.secret ? 'password' : f.format === 'url' ? 'url' : f.format === 'email' ? 'email' : 'text',
      valueType: 'string',
      // Secrets of a saved account are kept when the field is left empty.
      required: f.required !== false && !(editing && f.secret) && f.default === undefined,
      value,
      placeholder: f.secret && editing ? 'Saved — leave empty to keep' : f.default,
      pattern: f.pattern,
      patternMessage: f.pattern_message ? patternMessage(f.title, f.pattern_message) : undefined,
      secret: f.secret === true,
    };
  });
}

interface JsonSchema {
  type?: string;
  title?: string;
  description?: string;
  enum?: unknown[];
  items?: JsonSchema;
  minimum?: number;
  maximum?: number;
  default?: unknown;
  anyOf?: JsonSchema[];
  properties?: Record<string, JsonSchema>;
  required?: string[];
}

/**
 * A pattern's message with the field's label: "Integration Token must be …" reads on from the label, a message
 * that is a sentence of its own ("Use a legacy … key") follows it after a colon.
 */
export function patternMessage(label: string, message: string): string {
  return /^\p{Lu}/u.test(message) ? `${label}: ${message}` : `${label} ${message}`;
}

/**
 * One field per parameter of a tool's input schema, under `prefix.` in the body (e.g. `defaults.`). Defaults
 * are optional by nature (the caller fills in what the server leaves open); a call (`required`) marks the
 * schema's required parameters.
 */
export function schemaFields(
  schema: JsonSchema,
  bodyKey: string,
  idPrefix: string,
  values: Record<string, unknown> = {},
  o: { required?: boolean } = {},
): Field[] {
  return Object.entries(schema.properties ?? {}).map(([param, s]) => {
    const base = {
      name: `${bodyKey}.${param}`,
      key: param,
      id: idOf(idPrefix, param),
      label: s.title ?? param,
      description: describe(s),
      required: o.required === true && (schema.required ?? []).includes(param),
    };
    const value = values[param];
    if (s.enum) {
      return {
        ...base,
        control: 'select',
        valueType: s.type === 'integer' || s.type === 'number' ? s.type : 'string',
        options: choices(s.enum.map(String), value === undefined ? '' : String(value)),
      } satisfies Field;
    }
    switch (s.type) {
      case 'string':
        return { ...base, control: 'input', inputType: 'text', valueType: 'string', value: value === undefined ? undefined : String(value) } satisfies Field;
      case 'integer':
      case 'number':
        return {
          ...base,
          control: 'input',
          inputType: 'number',
          valueType: s.type,
          min: s.minimum,
          max: s.maximum,
          step: s.type === 'integer' ? '1' : 'any',
          value: value === undefined ? undefined : String(value),
        } satisfies Field;
      case 'boolean':
        return {
          ...base,
          control: 'select',
          valueType: 'boolean',
          options: choices(['true', 'false'], value === undefined ? '' : String(value)),
        } satisfies Field;
      default:
        if (s.type === 'array' && s.items?.type === 'string' && !s.items.enum?.length) {
          return {
            ...base,
            control: 'textarea',
            valueType: 'lines',
            placeholder: 'One value per line',
            value: Array.isArray(value) ? value.join('\n') : undefined,
          } satisfies Field;
        }
        // Objects, arrays of objects and alternatives (anyOf) are written as JSON.
        return {
          ...base,
          control: 'textarea',
          valueType: 'json',
          placeholder: s.type === 'array' ? 'JSON array, e.g. []' : 'JSON, e.g. {}',
          value: value === undefined ? undefined : JSON.stringify(value, null, 2),
        } satisfies Field;
    }
  });
}

function choices(values: string[], selected: string) {
  return [{ value: '', label: '(not set)', selected: selected === '' }, ...values.map((v) => ({ value: v, label: v, selected: v === selected }))];
}

/** The description, then the range and the default unless the description already gives them. */
function describe(s: JsonSchema): string | undefined {
  const text = s.description?.trim();
  const says = (words: RegExp) => text !== undefined && words.test(text);
  let hint = text;
  if ((s.minimum !== undefined || s.maximum !== undefined) && !says(/\d\s*[-–]\s*\d|\brange\b|\bbetween\b|\bat (least|most)\b/i))
    hint = sentences(
      hint,
      s.maximum === undefined ? `At least ${s.minimum}.` : s.minimum === undefined ? `At most ${s.maximum}.` : `Range ${s.minimum}–${s.maximum}.`,
    );
  if (s.default !== undefined && !says(/\bdefault/i)) hint = sentences(hint, `Default: ${JSON.stringify(s.default)}.`);
  return hint || undefined;
}

/** A hint with one more sentence: the first ends with a full stop before the next begins. */
export function sentences(first: string | undefined, next: string): string {
  if (!first) return next;
  return `${/[.!?]$/.test(first) ? first : `${first}.`} ${next}`;
}
