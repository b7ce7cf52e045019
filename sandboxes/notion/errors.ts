// Notion's error body and the message wordings of docs/provider-coverage.md
import { randomUUID } from 'node:crypto';

export type NotionErrorCode =
  | 'invalid_json'
  | 'invalid_request_url'
  | 'invalid_request'
  | 'validation_error'
  | 'missing_version'
  | 'unauthorized'
  | 'restricted_resource'
  | 'object_not_found'
  | 'conflict_error'
  | 'rate_limited'
  | 'internal_server_error'
  | 'service_unavailable';

/** Thrown by handlers; the server turns it into Notion's error body. */
export class NotionError extends Error {
  constructor(
    readonly status: number,
    readonly code: NotionErrorCode,
    message: string,
  ) {
    super(message);
  }
}

export function errorBody(status: number, code: string, message: string) {
  return { object: 'error', status, code, message, request_id: randomUUID() };
}

export type ObjectWord = 'page' | 'block' | 'database' | 'data_source';

export function notFound(word: ObjectWord, id: string): NotionError {
  return new NotionError(
    404,
    'object_not_found',
    `Could not find ${word} with ID: ${id}. Make sure the relevant pages and databases are shared with your integration.`,
  );
}

export function validation(message: string): NotionError {
  return new NotionError(400, 'validation_error', message);
}

/** How Notion prints an offending value inside backticks. */
export function shown(value: unknown): string {
  return value === undefined ? 'undefined' : JSON.stringify(value);
}

/** "body failed validation: <path> should be <expected>, instead was `<value>`." */
export function invalidField(path: string, expected: string, value: unknown): NotionError {
  const [scope] = path.split('.');
  return validation(`${scope} failed validation: ${path} should be ${expected}, instead was \`${shown(value)}\`.`);
}

/** Notion's "Fix one:" form, used when a value matches none of several allowed shapes. */
export function fixOne(lines: string[]): NotionError {
  const scope = lines[0]?.split('.')[0] ?? 'body';
  return validation(`${scope} failed validation. Fix one:\n${lines.join('\n')}`);
}

export function archivedEdit(): NotionError {
  return validation("Can't edit block that is archived. You must unarchive the block before editing.");
}

export const unauthorized = () => new NotionError(401, 'unauthorized', 'API token is invalid.');
export const invalidUrl = () => new NotionError(400, 'invalid_request_url', 'Invalid request URL.');
