// Request bodies declared as JSON Schemas, checked by ajv: one declaration gives the check and, through the
// messages beside it, an error that names the field in words (never ajv's own wording).
import { Ajv } from 'ajv';
import addFormatsModule from 'ajv-formats';
import { ApiError } from './http.ts';

const addFormats = addFormatsModule as unknown as (ajv: Ajv) => void;
const ajv = new Ajv({ allErrors: true, strict: true, allowUnionTypes: true });
addFormats(ajv);

export interface BodySchema {
  properties: Record<string, unknown>;
  required?: string[];
}

/**
 * A checker for a JSON object body: unknown fields are refused by name, and every other problem is reported
 * with the message of the most specific path that has one (`credit_limit.credits`, then `credit_limit`).
 */
export function bodyChecker<T>(schema: BodySchema, messages: Record<string, string>, refusedFields: Record<string, string> = {}): (body: unknown) => T {
  const validate = ajv.compile({ type: 'object', additionalProperties: false, ...schema });
  const allowed = Object.keys(schema.properties);
  return (body) => {
    const given = Object.keys(body as object);
    const refused = given.filter((k) => refusedFields[k]);
    if (refused.length) throw new ApiError(400, refused.map((k) => refusedFields[k]).join('; '));
    const extra = given.filter((k) => !allowed.includes(k));
    if (extra.length) throw new ApiError(400, `Unknown field(s): ${extra.join(', ')} (allowed: ${allowed.join(', ')})`);
    if (validate(body)) return body as T;
    const problems = new Set<string>();
    for (const err of validate.errors ?? []) {
      const path = err.instancePath.split('/').slice(1);
      if (err.keyword === 'required') path.push(String(err.params.missingProperty));
      if (err.keyword === 'additionalProperties') {
        problems.add(`"${[...path, err.params.additionalProperty].join('.')}" is not a known field${path.length ? ` of "${path.join('.')}"` : ''}`);
        continue;
      }
      let message: string | undefined;
      for (let n = path.length; n > 0 && !message; n--) message = messages[path.slice(0, n).join('.')];
      problems.add(message ?? `"${path.join('.')}" ${err.message}`);
    }
    throw new ApiError(400, [...problems].join('; '));
  };
}
