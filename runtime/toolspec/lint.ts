// Checks of a tool spec that find what cannot work although every key is well formed: a required output
// property no mapping produces (every call would end in unexpected_response), descriptions too long for the
// clients, lists of types some model providers refuse.
import { EACH_KEYS } from '../template/tree.ts';

const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);
const isEach = (v: unknown): v is Record<string, unknown> => isObject(v) && EACH_KEYS.some((k) => Object.hasOwn(v, k));

/** Keys of a JSON Schema whose values are data, not schemas (their contents are never checked as schemas). */
const DATA_KEYS = new Set(['enum', 'const', 'default', 'examples']);

/** Every place in a JSON Schema where `visit` finds something, as JSON pointer parts (data keys skipped). */
function walkSchema(schema: unknown, visit: (key: string, value: unknown) => boolean, at: string[] = []): string[][] {
  if (schema === null || typeof schema !== 'object') return [];
  const found: string[][] = [];
  for (const [key, value] of Object.entries(schema)) {
    if (visit(key, value)) found.push([...at, key]);
    else if (!DATA_KEYS.has(key)) found.push(...walkSchema(value, visit, [...at, key]));
  }
  return found;
}

/** Every `type: [..]` inside a schema (not portable to every model provider). */
export const typeLists = (schema: unknown): string[][] => walkSchema(schema, (key, value) => key === 'type' && Array.isArray(value));

/** Every `description` string longer than `max` inside a schema, with its length. */
export function longDescriptions(schema: unknown, max: number): Array<{ at: string[]; length: number }> {
  const lengths: number[] = [];
  const at = walkSchema(schema, (key, value) => key === 'description' && typeof value === 'string' && value.length > max && lengths.push(value.length) > 0);
  return at.map((a, i) => ({ at: a, length: lengths[i] }));
}

/**
 * The required properties of an output schema that a response map never produces, each with where in the map it
 * is missing. Only what the map spells out is judged: a key given by one expression, a list mapped item by item
 * without $map, or a schema without `properties` may produce anything.
 */
export function unmappedRequired(schema: unknown, map: unknown, at: string[] = []): Array<{ at: string[]; property: string }> {
  if (!isObject(schema) || !isObject(map) || isEach(map)) return [];
  const missing: Array<{ at: string[]; property: string }> = [];
  for (const property of Array.isArray(schema.required) ? schema.required : []) {
    if (typeof property === 'string' && !Object.hasOwn(map, property)) missing.push({ at, property });
  }
  const properties = isObject(schema.properties) ? schema.properties : {};
  for (const [key, value] of Object.entries(map)) {
    const sub = properties[key];
    if (!isObject(sub)) continue;
    if (isEach(value)) missing.push(...unmappedRequired(sub.items, value.$map, [...at, key, '$map']));
    else missing.push(...unmappedRequired(sub, value, [...at, key]));
  }
  return missing;
}
