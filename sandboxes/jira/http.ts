// Request/reply types shared by the sandbox's route handlers, and Jira's fixed error bodies.
import type { JiraStore } from './model.ts';
import type { Renderer } from './render.ts';

export interface JiraRequest {
  method: string;
  path: string;
  query: URLSearchParams;
  body: string;
  /** Authenticated caller, or null for an anonymous request. */
  callerId: string | null;
  /** The full request URL (for `self` of pages). */
  url: string;
}

export interface Reply {
  status: number;
  /** JSON body; omitted for empty answers (204). */
  json?: unknown;
}

export interface Services {
  store: JiraStore;
  render: Renderer;
  /** Opaque `nextPageToken` values of /search/jql, valid for the query they were issued for. */
  pageTokens: Map<string, { jql: string; offset: number }>;
}

export type Handler = (req: JiraRequest, params: string[], services: Services) => Reply;

export const errors = (messages: string[], fieldErrors: Record<string, string> = {}): { errorMessages: string[]; errors: Record<string, string> } => ({
  errorMessages: messages,
  errors: fieldErrors,
});

export const ISSUE_NOT_FOUND: Reply = { status: 404, json: errors(['Issue does not exist or you do not have permission to see it.']) };

export const INVALID_PAYLOAD = 'Invalid request payload. Refer to the REST API documentation and try again.';

export const NOT_AUTHENTICATED = { message: 'Client must be authenticated to access this resource.', 'status-code': 401 };

/** Parses a JSON object body; undefined when it is not a JSON object. */
export function jsonObject(body: string): Record<string, unknown> | undefined {
  try {
    const value: unknown = JSON.parse(body || '{}');
    return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

/** Comma lists that may also be repeated (`expand=a,b&expand=c`). */
export function listParam(query: URLSearchParams, name: string): string[] {
  return query
    .getAll(name)
    .flatMap((v) => v.split(','))
    .map((v) => v.trim())
    .filter(Boolean);
}

/** A non-negative integer query parameter, the default when absent, or NaN when malformed. */
export function intParam(query: URLSearchParams, name: string, fallback: number): number {
  const raw = query.get(name);
  if (raw === null || raw === '') return fallback;
  return /^-?\d+$/.test(raw) ? Number(raw) : Number.NaN;
}
