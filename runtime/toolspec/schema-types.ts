// The TypeScript shapes of spec files (spec-types.ts), generated from the spec language's JSON Schemas so that
// the code that reads specs and the schemas that check them cannot drift apart. `npm run generate:spec` writes
// the file; test/spec-reference.test.ts fails when the committed one differs.
import { exchangesSchema, providerSchema, toolSchema } from './language.ts';

type Schema = Record<string, unknown> & { $ref?: string; description?: string; properties?: Record<string, Schema>; required?: string[] };

const FILES: Record<string, Schema> = { 'tool.schema.json': toolSchema, 'provider.schema.json': providerSchema, 'exchanges.schema.json': exchangesSchema };

/** The type each definition, and each object written inline that code names, is given ('file#pointer'). */
const NAMES: Record<string, string> = {
  'tool.schema.json#': 'ToolSpec',
  'tool.schema.json#/properties/annotations': 'ToolAnnotations',
  'tool.schema.json#/definitions/version': 'LanguageVersion',
  'tool.schema.json#/definitions/objectSchema': 'JsonSchema',
  'tool.schema.json#/definitions/request': 'RequestSpec',
  'tool.schema.json#/definitions/step': 'StepSpec',
  'tool.schema.json#/definitions/pluginUse': 'PluginUseSpec',
  'tool.schema.json#/definitions/errorRule': 'ErrorRuleSpec',
  'tool.schema.json#/definitions/pagination': 'PaginationSpec',
  'tool.schema.json#/definitions/pageParam': 'PageParam',
  'provider.schema.json#': 'ProviderSpec',
  'provider.schema.json#/properties/account/properties/fields/items': 'AccountFieldSpec',
  'provider.schema.json#/definitions/verifyWay': 'VerifyWay',
  'provider.schema.json#/properties/connect': 'ConnectSpec',
  'exchanges.schema.json#': 'ExchangesSpec',
  'exchanges.schema.json#/definitions/exchange': 'ExchangeSpec',
  'exchanges.schema.json#/definitions/request': 'ExchangeRequestSpec',
};

/** Definitions that are kinds of text or any JSON value, written as that type where they are used. */
const INLINE: Record<string, string> = { template: 'string', templateTree: 'unknown', pointer: 'string', pointerOrTemplate: 'string' };

/** Written as it is rather than from its schema: input and output are JSON Schemas of any shape. */
const AS_IS: Record<string, string> = { JsonSchema: 'Record<string, unknown>' };

const literal = (value: unknown) => JSON.stringify(value).replace(/"/g, "'");
const comment = (text: string | undefined, indent: string) => (text ? `${indent}/** ${text.replace(/\*\//g, '* /')} */\n` : '');

class Declarations {
  /** Declarations by file#pointer, in the order they are first met. */
  readonly text = new Map<string, string>();

  /** The name of the type at `at`, declared (once) from its schema. */
  named(at: string, schema: Schema): string {
    const name = NAMES[at];
    if (!name) throw new Error(`the schemas' ${at} needs a type name in NAMES (runtime/toolspec/schema-types.ts)`);
    if (!this.text.has(at)) {
      this.text.set(at, '');
      const type = AS_IS[name] ?? this.type(schema, at, '');
      this.text.set(at, comment(schema.description, '') + (type.startsWith('{') ? `export interface ${name} ${type}\n` : `export type ${name} = ${type};\n`));
    }
    return name;
  }

  /** A schema met inside another: by its name when it has one, else written out. */
  private member(schema: Schema, at: string, indent: string): string {
    return NAMES[at] ? this.named(at, schema) : this.type(schema, at, indent);
  }

  private type(schema: Schema, at: string, indent: string): string {
    if (schema.$ref) {
      const [file, pointer] = schema.$ref.split('#');
      const name = pointer.split('/').pop()!;
      if (INLINE[name]) return INLINE[name];
      const targetFile = file || at.split('#')[0];
      return this.named(`${targetFile}#${pointer}`, (FILES[targetFile].definitions as Record<string, Schema>)[name]);
    }
    if ('const' in schema) return literal(schema.const);
    if (Array.isArray(schema.enum)) return schema.enum.map(literal).join(' | ');
    for (const key of ['oneOf', 'anyOf'] as const) {
      if (Array.isArray(schema[key])) return (schema[key] as Schema[]).map((s, i) => this.member(s, `${at}/${key}/${i}`, indent)).join(' | ');
    }
    const types = Array.isArray(schema.type) ? (schema.type as string[]) : schema.type ? [schema.type as string] : [];
    if (types.length === 0) return 'unknown';
    return types.map((type) => this.typeNamed(type, schema, at, indent)).join(' | ');
  }

  private typeNamed(type: string, schema: Schema, at: string, indent: string): string {
    switch (type) {
      case 'string':
      case 'boolean':
      case 'null':
        return type;
      case 'integer':
      case 'number':
        return 'number';
      case 'array': {
        const item = schema.items ? this.member(schema.items as Schema, `${at}/items`, indent) : 'unknown';
        return /^[\w']+$/.test(item) ? `${item}[]` : `Array<${item}>`;
      }
      default:
        return this.object(schema, at, indent);
    }
  }

  private object(schema: Schema, at: string, indent: string): string {
    const extra = schema.additionalProperties;
    if (!schema.properties) {
      return extra && typeof extra === 'object'
        ? `Record<string, ${this.member(extra as Schema, `${at}/additionalProperties`, indent)}>`
        : 'Record<string, unknown>';
    }
    const required = new Set(schema.required ?? []);
    const inner = `${indent}  `;
    const lines = Object.entries(schema.properties).map(([key, value]) => {
      const type = this.member(value, `${at}/properties/${key}`, inner);
      return `${comment(value.description, inner)}${inner}${key}${required.has(key) ? '' : '?'}: ${type};\n`;
    });
    return `{\n${lines.join('')}${indent}}`;
  }
}

/** The whole of spec-types.ts. */
export function specTypes(): string {
  const declarations = new Declarations();
  for (const [file, schema] of Object.entries(FILES)) declarations.named(`${file}#`, schema);
  return [
    '// Generated by `npm run generate:spec` from runtime/toolspec/schemas/ (runtime/toolspec/schema-types.ts): edit the',
    '// schemas, not this file. The shapes of spec files as the loader hands them on once they match the schemas.',
    '',
    ...declarations.text.values(),
  ].join('\n');
}
