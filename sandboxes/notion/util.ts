// Small helpers shared by the Notion sandbox modules: ids, time, plain-object checks.
import { randomUUID } from 'node:crypto';
import { invalidField } from './errors.ts';

export type Json = Record<string, unknown>;

export function isObject(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Accepts a UUID with or without dashes; returns the dashed lower-case form or null. */
export function normalizeId(raw: string): string | null {
  const hex = raw.replace(/-/g, '').toLowerCase();
  if (!/^[0-9a-f]{32}$/.test(hex)) return null;
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/** Like normalizeId but answers Notion's validation error for a malformed id. */
export function requireId(raw: unknown, path: string): string {
  const id = typeof raw === 'string' ? normalizeId(raw) : null;
  if (!id) throw invalidField(path, 'a valid uuid', raw);
  return id;
}

export const newId = () => randomUUID();

/** Notion stores edit times at minute precision. */
export function minuteNow(): string {
  const d = new Date();
  d.setUTCSeconds(0, 0);
  return d.toISOString();
}

export const userRef = (id: string) => ({ object: 'user', id });

export function notionUrl(title: string, id: string): string {
  const slug = title.replace(/[^\p{L}\p{N}]+/gu, '-').replace(/^-+|-+$/g, '');
  const bare = id.replace(/-/g, '');
  return `https://www.notion.so/${slug ? `${slug}-` : ''}${bare}`;
}

/** Rejects body keys this endpoint does not know, as Notion's strict validator does. */
export function rejectUnknownKeys(body: Json, allowed: readonly string[], path = 'body'): void {
  for (const key of Object.keys(body)) {
    if (!allowed.includes(key)) throw invalidField(`${path}.${key}`, 'not present', body[key]);
  }
}
