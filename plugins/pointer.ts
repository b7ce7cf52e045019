// JSON pointers for plugin options ("/fields/description"), with "*" matching every array item or
// object member, so one option can reach e.g. every issue of a search result.
import { pointerParts, type RequestPlugin, type ResponsePlugin } from '../runtime/plugin-api.ts';

/** Where a value sits: its container and its key there. */
type Place = [container: Record<string, unknown>, key: string];

/** Calls `fn` for each value the pointer reaches and replaces it with the result (undefined leaves it). */
export function updateAt(root: unknown, pointer: string, fn: (value: unknown) => unknown): void {
  for (const [container, key] of placesOf(root, pointer)) {
    const next = fn(container[key]);
    if (next !== undefined) container[key] = next;
  }
}

/** updateAt for every pointer with a conversion that takes its time (PluginContext.offLoop), one value after the other. */
export async function convertEachAt(root: unknown, pointers: string[], fn: (value: unknown) => Promise<unknown> | undefined): Promise<void> {
  for (const [container, key] of pointers.flatMap((pointer) => placesOf(root, pointer))) {
    const next = await fn(container[key]);
    if (next !== undefined) container[key] = next;
  }
}

function placesOf(root: unknown, pointer: string): Place[] {
  const places: Place[] = [];
  const walk = (node: unknown, parts: string[]): void => {
    if (node === null || typeof node !== 'object' || parts.length === 0) return;
    const [head, ...rest] = parts;
    const container = node as Record<string, unknown>;
    const keys = head === '*' ? Object.keys(container) : Object.hasOwn(container, head) ? [head] : [];
    for (const key of keys) {
      if (rest.length === 0) places.push([container, key]);
      else walk(container[key], rest);
    }
  };
  walk(root, pointerParts(pointer));
  return places;
}

export const POINTERS_OPTIONS = {
  type: 'object',
  additionalProperties: false,
  required: ['pointers'],
  properties: { pointers: { type: 'array', minItems: 1, items: { type: 'string', pattern: '^(/[^/]+)+$' } } },
};

/**
 * A plugin that replaces every value reached by its `pointers` option with `convert(value)` (undefined
 * leaves a value as it is): in the request body for a request plugin, in the result for a response plugin.
 */
export function convertAt(name: string, hook: 'request', description: string, convert: (value: unknown) => unknown): RequestPlugin<{ pointers: string[] }>;
export function convertAt(name: string, hook: 'response', description: string, convert: (value: unknown) => unknown): ResponsePlugin<{ pointers: string[] }>;
export function convertAt(
  name: string,
  hook: 'request' | 'response',
  description: string,
  convert: (value: unknown) => unknown,
): RequestPlugin<{ pointers: string[] }> | ResponsePlugin<{ pointers: string[] }> {
  const each = (root: unknown, pointers: string[]) => {
    for (const pointer of pointers) updateAt(root, pointer, convert);
  };
  return hook === 'request'
    ? { name, hook, description, optionsSchema: POINTERS_OPTIONS, apply: (req, { options }) => (each(req.body, options.pointers), req) }
    : { name, hook, description, optionsSchema: POINTERS_OPTIONS, apply: (result, { options }) => (each(result, options.pointers), result) };
}
