// How deep a JSON value nests, measured without recursion: values nested far enough exhaust the stack of
// recursive code (validation, cloning, templates), so callers check this before any such walk.

/** How deep tool arguments (and custom-tool defaults, which become arguments) may nest, objects and arrays. */
export const MAX_ARGUMENT_DEPTH = 32;

/** True when `value` has objects or arrays nested more than `limit` levels deep (walked without recursion). */
export function nestedDeeperThan(value: unknown, limit: number): boolean {
  const stack: Array<[unknown, number]> = [[value, 1]];
  while (stack.length) {
    const [v, depth] = stack.pop()!;
    if (v === null || typeof v !== 'object') continue;
    if (depth > limit) return true;
    for (const child of Array.isArray(v) ? v : Object.values(v)) if (child !== null && typeof child === 'object') stack.push([child, depth + 1]);
  }
  return false;
}
