// OpenAPI schemas -> the JSON Schemas a tool spec may carry: JSON Schema 2020-12 that every model provider
// accepts (one type per schema, `anyOf` for unions and null), that the loader's strict ajv compiles (known
// keywords and formats only, a type for every type-specific keyword), with no cycle and a bounded depth.
import { createArgumentsAjv } from '../toolspec/loader.ts';
import type { Schema } from './document.ts';
import { shorten } from './text.ts';

export interface SchemaOptions {
  /**
   * input: what a tool accepts, with the document's constraints (ajv checks the arguments against them).
   * output: what it returns, shape only: types and properties, no required, enum, format, bounds or closed objects,
   * which an API loosens over time (a new enum value must not turn a good answer into unexpected_response).
   */
  mode: 'input' | 'output';
  /** Levels of nested objects kept below this schema; a deeper object becomes `{ type: object }`. */
  depth: number;
  /** Description length at the first level (properties of this schema); 0 drops them. */
  describe: number;
  /** Description length below the first level; 0 drops them. */
  describeNested: number;
}

/** Formats the tool-spec ajv knows: any other would fail strict compilation. */
const KNOWN_FORMATS = new Set(Object.keys((createArgumentsAjv() as unknown as { formats: Record<string, unknown> }).formats));
const TYPES = ['string', 'number', 'integer', 'boolean', 'array', 'object', 'null'] as const;
type JsonType = (typeof TYPES)[number];

const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);

/** A schema converted as the options say. Cycles (a dereferenced circular $ref) end in an untyped or object schema. */
export function portableSchema(schema: unknown, options: SchemaOptions): Schema {
  return new Converter(options).convert(schema, 0, true);
}

/**
 * allOf merged into one schema (properties and required joined; the first branch that says wins for
 * everything else), as far as the branches are plain schemas. Used for a request body's top level too.
 */
export function flattenAllOf(schema: Record<string, unknown>, seen: Set<object> = new Set()): Record<string, unknown> {
  if (!Array.isArray(schema.allOf) || seen.has(schema)) return schema;
  seen.add(schema);
  const { allOf, ...own } = schema;
  const merged: Record<string, unknown> = { ...own };
  const properties: Record<string, unknown> = {};
  const required = new Set<string>(Array.isArray(own.required) ? own.required.map(String) : []);
  for (const raw of allOf as unknown[]) {
    if (!isObject(raw) || seen.has(raw)) continue;
    const branch = flattenAllOf(raw, seen);
    Object.assign(properties, isObject(branch.properties) ? branch.properties : {});
    for (const r of Array.isArray(branch.required) ? branch.required : []) required.add(String(r));
    for (const [k, v] of Object.entries(branch)) if (k !== 'properties' && k !== 'required' && merged[k] === undefined) merged[k] = v;
  }
  Object.assign(properties, isObject(own.properties) ? own.properties : {});
  if (Object.keys(properties).length) merged.properties = properties;
  if (required.size) merged.required = [...required];
  seen.delete(schema);
  return merged;
}

/** The JSON types a schema allows (3.1 type lists, 3.0 nullable, 2.0 x-nullable); undefined when it says none. */
export function typesOf(schema: Record<string, unknown>): { types: JsonType[]; nullable: boolean } {
  const declared = (Array.isArray(schema.type) ? schema.type : schema.type === undefined ? [] : [schema.type]).filter((t): t is JsonType =>
    TYPES.includes(t as JsonType),
  );
  let types = declared.filter((t) => t !== 'null');
  if (!types.length) {
    // No type: inferred from the keywords, as a reader would.
    if (isObject(schema.properties) || schema.additionalProperties !== undefined) types = ['object'];
    else if (schema.items !== undefined) types = ['array'];
  }
  const nullable = declared.includes('null') || schema.nullable === true || schema['x-nullable'] === true;
  return { types, nullable };
}

const STRING_KEYS = ['minLength', 'maxLength'];
const NUMBER_KEYS = ['minimum', 'maximum', 'multipleOf'];
const ARRAY_KEYS = ['minItems', 'maxItems', 'uniqueItems'];
const OBJECT_KEYS = ['minProperties', 'maxProperties'];

class Converter {
  private readonly ancestors = new Set<object>();
  /** Inside a union branch ajv fills no default (and strict mode refuses one there). */
  private inUnion = 0;

  constructor(private readonly options: SchemaOptions) {}

  /** `level` counts nested objects; `top` marks the schema handed in and the properties of an object (defaults live there). */
  convert(raw: unknown, level: number, top: boolean): Schema {
    if (raw === false) return { not: {} };
    if (!isObject(raw)) return {};
    if (this.ancestors.has(raw)) return this.cut(raw);
    this.ancestors.add(raw);
    try {
      return this.convertNew(flattenAllOf(raw), level, top);
    } finally {
      this.ancestors.delete(raw);
    }
  }

  /** Where a schema refers back to one of its ancestors: its type only. */
  private cut(raw: Record<string, unknown>): Schema {
    const { types } = typesOf(flattenAllOf(raw));
    return types.length === 1 ? { type: types[0] } : {};
  }

  private convertNew(s: Record<string, unknown>, level: number, top: boolean): Schema {
    const input = this.options.mode === 'input';
    const { types, nullable } = typesOf(s);
    const union = Array.isArray(s.oneOf) ? s.oneOf : Array.isArray(s.anyOf) ? s.anyOf : undefined;
    let out: Schema;
    let hoisted: string | undefined;
    // What follows may end up as anyOf branches (a union, several types, or null beside the type).
    const branched = Boolean(union) || types.length > 1 || nullable;
    if (branched) this.inUnion++;
    if (union) {
      // oneOf becomes anyOf: documents' branches often overlap (a string and a string with a format),
      // and then "exactly one" refuses values the API takes.
      const branches: Schema[] = [];
      for (const b of union) {
        // A branch's description says what the union's would: the first one stands for the union.
        const { description, ...c } = this.convert(b, level, false);
        hoisted ??= description as string | undefined;
        for (const one of Array.isArray(c.anyOf) && Object.keys(c).length === 1 ? (c.anyOf as Schema[]) : [c]) {
          if (!branches.some((x) => JSON.stringify(x) === JSON.stringify(one))) branches.push(one);
        }
      }
      out = branches.length === 1 ? branches[0] : { anyOf: branches };
      if (branches.some((b) => Object.keys(b).length === 0)) out = {};
    } else if (!types.length && nullable && !s.nullable && !s['x-nullable']) {
      // `type: "null"` alone (a union's null branch), not "anything, or null".
      out = { type: 'null' };
    } else if (types.length > 1) {
      out = { anyOf: types.map((t) => this.single(s, t, level)) };
    } else {
      out = this.single(s, types[0], level);
    }
    if (branched) this.inUnion--;
    if (nullable && Object.keys(out).length) out = withNull(out);
    const description = this.description(s.description ?? hoisted, level);
    const result: Schema = {};
    if (description) result.description = description;
    if (input && top && !this.inUnion && s.default !== undefined && s.readOnly !== true) result.default = s.default;
    // Keywords first, then the annotations, as a person writes them: { type: string, description: ... }.
    return { ...out, ...result };
  }

  private description(text: unknown, level: number): string | undefined {
    const limit = level === 0 ? this.options.describe : this.options.describeNested;
    return typeof text === 'string' && limit > 0 ? shorten(text, limit) || undefined : undefined;
  }

  /** The keywords of one type. */
  private single(s: Record<string, unknown>, type: JsonType | undefined, level: number): Schema {
    const input = this.options.mode === 'input';
    const out: Schema = type ? { type } : {};
    const copy = (keys: string[]) => {
      for (const k of keys) if (typeof s[k] === 'number' || typeof s[k] === 'boolean') out[k] = s[k];
    };
    if (input && Array.isArray(s.enum) && s.enum.length) out.enum = s.enum;
    if (input && s.const !== undefined) out.const = s.const;
    switch (type) {
      case 'string':
        if (!input) break;
        copy(STRING_KEYS);
        if (typeof s.pattern === 'string' && validPattern(s.pattern)) out.pattern = s.pattern;
        if (typeof s.format === 'string' && KNOWN_FORMATS.has(s.format)) out.format = s.format;
        break;
      case 'number':
      case 'integer':
        if (!input) break;
        copy(NUMBER_KEYS);
        exclusiveBounds(s, out);
        break;
      case 'array':
        if (s.items !== undefined) {
          // Array items sit at the same level as the array: a list of issues is as deep as one issue.
          const items = this.convert(s.items, level, false);
          if (Object.keys(items).length) out.items = items;
        }
        if (input) copy(ARRAY_KEYS);
        break;
      case 'object':
        this.object(s, out, level);
        break;
    }
    return out;
  }

  private object(s: Record<string, unknown>, out: Schema, level: number): void {
    const input = this.options.mode === 'input';
    if (level >= this.options.depth) return;
    const properties: Record<string, Schema> = {};
    for (const [name, p] of Object.entries(isObject(s.properties) ? s.properties : {})) {
      // readOnly properties are answers only, writeOnly ones requests only.
      if (isObject(p) && (input ? p.readOnly === true : p.writeOnly === true)) continue;
      properties[name] = this.convert(p, level + 1, input);
    }
    // Required properties are kept in arguments only: GitHub's own examples leave out properties its schemas
    // require in 53 of 1,197 answers, and a result missing one would be refused as unexpected_response.
    if (input) {
      const required = (Array.isArray(s.required) ? s.required.map(String) : []).filter((r) => r in properties);
      if (required.length) out.required = required;
    }
    if (Object.keys(properties).length) out.properties = properties;
    if (!input) return;
    if (s.additionalProperties === false) out.additionalProperties = false;
    else if (isObject(s.additionalProperties) && Object.keys(s.additionalProperties).length) {
      out.additionalProperties = this.convert(s.additionalProperties, level + 1, false);
    }
    for (const k of OBJECT_KEYS) if (typeof s[k] === 'number') out[k] = s[k];
  }
}

/** `anyOf: [schema, null]`, or null added to an anyOf that lacks it. */
function withNull(schema: Schema): Schema {
  const branches = Array.isArray(schema.anyOf) && Object.keys(schema).length === 1 ? (schema.anyOf as Schema[]) : [schema];
  if (branches.some((b) => b.type === 'null')) return schema;
  return { anyOf: [...branches, { type: 'null' }] };
}

/** 3.0 and 2.0 write exclusive bounds as booleans beside minimum/maximum; 2020-12 as numbers. */
function exclusiveBounds(s: Record<string, unknown>, out: Schema): void {
  for (const [flag, bound] of [
    ['exclusiveMinimum', 'minimum'],
    ['exclusiveMaximum', 'maximum'],
  ] as const) {
    if (typeof s[flag] === 'number') out[flag] = s[flag];
    else if (s[flag] === true && typeof s[bound] === 'number') {
      out[flag] = s[bound];
      delete out[bound];
    }
  }
}

function validPattern(pattern: string): boolean {
  try {
    new RegExp(pattern, 'u');
    return true;
  } catch {
    return false;
  }
}
