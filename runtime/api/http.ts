// JSON in and out for the management API: body reading, field checks, and errors as {error, message}.
import type { Context, Next } from 'koa';
import { QuotaExceededError } from '../access/owner-limits.ts';
import { PasswordsBusyError } from '../access/passwords.ts';
import { AccountFieldError } from '../accounts/accounts.ts';
import { RestrictionError } from '../access/restrictions.ts';
import { CursorError } from '../audit/audit-trail.ts';
import { BodyTooLargeError, readBody } from '../http/body.ts';
import { hiddenCharacterProblem } from '../names.ts';
import { DuplicateKeyError, StoreUnavailableError } from '../store/port.ts';

/** A management-API failure: its HTTP status and a message naming what is wrong. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

const STATUS_NAMES: Record<number, string> = {
  400: 'Bad Request',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'Not Found',
  409: 'Conflict',
  413: 'Payload Too Large',
  415: 'Unsupported Media Type',
  429: 'Too Many Requests',
  502: 'Bad Gateway',
  503: 'Service Unavailable',
};

export const notFound = (what: string) => new ApiError(404, `${what} not found`);

/**
 * Turns every failure of a route into the {error, message} body with its status; others are logged. A store
 * that refuses writes or does not answer goes on to the service's one answer for it (app.ts: 503, Retry-After).
 */
export async function apiErrors(ctx: Context, next: Next): Promise<void> {
  try {
    await next();
  } catch (err) {
    if (err instanceof StoreUnavailableError) throw err;
    let status = 500;
    let message = 'Internal error';
    if (err instanceof ApiError) [status, message] = [err.status, err.message];
    else if (err instanceof AccountFieldError || err instanceof RestrictionError || err instanceof CursorError) [status, message] = [400, err.message];
    else if (err instanceof QuotaExceededError) [status, message] = [403, err.message];
    else if (err instanceof PasswordsBusyError) {
      [status, message] = [503, err.message];
      ctx.set('Retry-After', '1');
    } else if (err instanceof DuplicateKeyError)
      [status, message] = [409, `${err.collection.replace(/s$/, '')} already exists (${err.fields.join(', ')} must be unique)`];
    else ctx.app.emit('error', err, ctx);
    ctx.status = status;
    ctx.body = { error: STATUS_NAMES[status] ?? 'Internal Server Error', message };
  }
}

export function bearer(ctx: Context): string | undefined {
  return /^Bearer +(\S+)$/i.exec(ctx.get('authorization'))?.[1];
}

export async function jsonBody(ctx: Context, limit: number, optional = false): Promise<Record<string, unknown>> {
  // No body: no length and no chunks, or the `Content-Length: 0` that fetch() sends with a bodiless POST.
  if (optional && (ctx.get('content-length') === '0' || (!ctx.get('content-length') && !ctx.get('transfer-encoding')))) return {};
  if (!ctx.is('application/json')) throw new ApiError(415, 'Content-Type must be application/json');
  let text: string;
  try {
    text = await readBody(ctx.req, limit);
  } catch (err) {
    if (err instanceof BodyTooLargeError) throw new ApiError(413, `The request body is larger than ${limit} bytes`);
    throw err;
  }
  if (optional && text.trim() === '') return {};
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    throw new ApiError(400, `The body is not valid JSON: ${(err as Error).message}`);
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) throw new ApiError(400, 'The body must be a JSON object');
  return value as Record<string, unknown>;
}

/** A form's fields (application/x-www-form-urlencoded), as the pages without script post them. */
export async function formBody(ctx: Context, limit: number): Promise<URLSearchParams> {
  if (!ctx.is('application/x-www-form-urlencoded')) throw new ApiError(415, 'Content-Type must be application/x-www-form-urlencoded');
  try {
    return new URLSearchParams(await readBody(ctx.req, limit));
  } catch (err) {
    if (err instanceof BodyTooLargeError) throw new ApiError(413, `The request body is larger than ${limit} bytes`);
    throw err;
  }
}

export function str(body: Record<string, unknown>, name: string, o: { required?: boolean; pattern?: RegExp; what?: string } = {}): string | undefined {
  const v = body[name];
  if (v === undefined || v === null) {
    if (o.required) throw new ApiError(400, `"${name}" is required`);
    return undefined;
  }
  if (typeof v !== 'string' || v.trim() === '' || v.length > 200) throw new ApiError(400, `"${name}" must be a non-empty string of at most 200 characters`);
  // Every such string is a name or an identifier someone reads: no control or invisible characters.
  const hidden = hiddenCharacterProblem(v);
  if (hidden) throw new ApiError(400, `"${name}" ${hidden}`);
  if (o.pattern && !o.pattern.test(v)) throw new ApiError(400, `"${name}" must be ${o.what ?? `of the form ${o.pattern}`}`);
  return v;
}

/** An http(s) URL of the owner's app that a person's browser is sent to (`what` says what it is for). */
export function appUrl(value: string, name: string, what: string): string {
  if (!URL.canParse(value)) throw new ApiError(400, `"${name}" must be ${what}`);
  const url = new URL(value);
  if (url.protocol !== 'https:' && url.protocol !== 'http:') throw new ApiError(400, `"${name}" must be an http(s) URL`);
  if (url.username || url.password) throw new ApiError(400, `"${name}" must not contain credentials`);
  return url.href;
}

export function onlyFields(body: Record<string, unknown>, allowed: string[]): void {
  const extra = Object.keys(body).filter((k) => !allowed.includes(k));
  if (extra.length) throw new ApiError(400, `Unknown field(s): ${extra.join(', ')} (allowed: ${allowed.join(', ')})`);
}

/**
 * Refuses a user-supplied object the store cannot keep as given: a key starting with "$" or containing "." or
 * NUL (MongoDB and the embedded store read those as operators and paths). The message names the key.
 */
export function storableKeys(value: unknown, field: string): void {
  const stack: Array<[unknown, string]> = [[value, field]];
  while (stack.length) {
    const [v, at] = stack.pop()!;
    if (v === null || typeof v !== 'object') continue;
    for (const [k, child] of Object.entries(v)) {
      const path = Array.isArray(v) ? `${at}[${k}]` : `${at}.${k}`;
      if (!Array.isArray(v) && (k.startsWith('$') || k.includes('.') || k.includes('\0'))) {
        throw new ApiError(400, `"${field}" cannot hold the key ${JSON.stringify(k)} (at ${path}): keys may not start with "$" or contain "." or NUL`);
      }
      stack.push([child, path]);
    }
  }
}

const SINGLE_SLASH = /^\/(?![/\\])/;

/**
 * Where to go after sign-in: a path of this origin as the browser will read it (tabs and newlines dropped,
 * backslashes taken for slashes, dot segments resolved), else "/" (no open redirect). assets/app.js applies
 * the same rule before it follows `next`.
 */
export function safeNext(next: unknown, origin: string): string {
  if (typeof next !== 'string' || !SINGLE_SLASH.test(next)) return '/';
  let url: URL;
  try {
    url = new URL(next, origin);
  } catch {
    return '/';
  }
  const path = url.pathname + url.search + url.hash;
  return url.origin === origin && SINGLE_SLASH.test(path) ? path : '/';
}
