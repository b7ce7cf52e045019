// Checks and helpers shared by both adapters, so they accept exactly the same dialect (see port.ts).
import { randomUUID } from 'node:crypto';
import { DialectError, type Filter, type Update } from './port.ts';

const FIELD_OPERATORS = new Set(['$eq', '$ne', '$in', '$nin', '$gt', '$gte', '$lt', '$lte', '$exists']);
const UPDATE_OPERATORS = new Set(['$set', '$unset', '$inc', '$min', '$max', '$push', '$addToSet', '$pull', '$setOnInsert']);
const COLLECTION_NAME = /^[A-Za-z][A-Za-z0-9_-]*$/;

export function newId(): string {
  return randomUUID();
}

export function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== 'object' || value === null) return false;
  const proto = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

/** `{ $gte: 1 }` rather than a sub-document to compare with. */
export function isOperatorObject(value: unknown): value is Record<string, unknown> {
  return isPlainObject(value) && Object.keys(value).some((key) => key.startsWith('$'));
}

export function checkCollectionName(name: string): void {
  if (!COLLECTION_NAME.test(name)) throw new DialectError(`invalid collection name "${name}"`);
}

export function checkFilter(filter: Filter): void {
  if (!isPlainObject(filter)) throw new DialectError('a filter must be a plain object');
  for (const [key, value] of Object.entries(filter)) {
    if (key === '$or' || key === '$and') {
      if (!Array.isArray(value) || value.length === 0) throw new DialectError(`${key} needs a non-empty array of filters`);
      value.forEach((sub) => checkFilter(sub as Filter));
    } else if (key.startsWith('$')) {
      throw new DialectError(`unsupported filter operator ${key}`);
    } else {
      checkFieldCondition(key, value);
    }
  }
}

function checkFieldCondition(path: string, condition: unknown): void {
  if (condition instanceof RegExp) throw new DialectError(`regular expressions are not supported (${path})`);
  if (!isOperatorObject(condition)) return;
  for (const [op, operand] of Object.entries(condition)) {
    if (!FIELD_OPERATORS.has(op)) {
      throw new DialectError(op.startsWith('$') ? `unsupported operator ${op} on ${path}` : `operators mixed with fields on ${path}`);
    }
    if ((op === '$in' || op === '$nin') && !Array.isArray(operand)) throw new DialectError(`${op} on ${path} needs an array`);
    if (op === '$exists' && typeof operand !== 'boolean') throw new DialectError(`$exists on ${path} needs true or false`);
  }
}

export function checkUpdate(update: Update): void {
  if (!isPlainObject(update)) throw new DialectError('an update must be a plain object');
  const operators = Object.entries(update);
  if (operators.length === 0) throw new DialectError('an update needs at least one operator');
  const paths: string[] = [];
  for (const [op, fields] of operators) {
    if (!UPDATE_OPERATORS.has(op)) {
      throw new DialectError(op.startsWith('$') ? `unsupported update operator ${op}` : 'replacement documents are not supported; use $set');
    }
    if (!isPlainObject(fields)) throw new DialectError(`${op} needs an object of paths`);
    for (const [path, value] of Object.entries(fields)) {
      if (path === '' || path.startsWith('$')) throw new DialectError(`invalid path "${path}" in ${op}`);
      if ((op === '$push' || op === '$addToSet') && isOperatorObject(value)) {
        if (Object.keys(value).join() !== '$each' || !Array.isArray(value.$each)) {
          throw new DialectError(`${op} on ${path} supports only { $each: [...] }`);
        }
      }
      paths.push(path);
    }
  }
  paths.sort();
  for (let i = 1; i < paths.length; i++) {
    const [before, path] = [paths[i - 1]!, paths[i]!];
    if (path === before || path.startsWith(`${before}.`)) throw new DialectError(`conflicting update paths ${before} and ${path}`);
  }
}

export function setPath(target: Record<string, unknown>, path: string, value: unknown): void {
  const parts = path.split('.');
  let node = target;
  for (const part of parts.slice(0, -1)) {
    if (!isPlainObject(node[part])) node[part] = {};
    node = node[part] as Record<string, unknown>;
  }
  node[parts[parts.length - 1]!] = value;
}

/**
 * The equality conditions of a filter that an upsert starts from, as MongoDB takes them: top level, inside
 * $and, a single-branch $or, and $eq; as [dotted path, value] pairs.
 */
export function upsertEqualities(filter: Filter): Array<[string, unknown]> {
  const equalities: Array<[string, unknown]> = [];
  const collect = (part: Filter): void => {
    for (const [key, value] of Object.entries(part)) {
      if (key === '$and') (value as Filter[]).forEach(collect);
      else if (key === '$or') {
        if ((value as Filter[]).length === 1) collect((value as Filter[])[0]!);
      } else if (!isOperatorObject(value)) equalities.push([key, value]);
      else if ('$eq' in value) equalities.push([key, value.$eq]);
    }
  };
  collect(filter);
  return equalities;
}

/** The document an upsert starts from: the filter's equalities (upsertEqualities), with dotted paths expanded. */
export function upsertSeed(filter: Filter): Record<string, unknown> {
  const seed: Record<string, unknown> = {};
  for (const [path, value] of upsertEqualities(filter)) setPath(seed, path, structuredClone(value));
  return seed;
}

/** Whether two dotted paths touch the same data (equal, or one inside the other). */
export function pathsOverlap(a: string, b: string): boolean {
  return a === b || a.startsWith(`${b}.`) || b.startsWith(`${a}.`);
}

/** Every path an update writes, whatever the operator. */
export function updatePaths(update: Update): string[] {
  return Object.values(update).flatMap((fields) => Object.keys(fields as object));
}

/** The _id an upsert will insert with, when the filter or the update pins one. */
export function pinnedUpsertId(filter: Filter, update: Update): unknown {
  return upsertSeed(filter)._id ?? update.$setOnInsert?._id ?? update.$set?._id;
}
