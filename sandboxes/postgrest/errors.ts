// PostgREST error bodies and the SQLSTATE -> HTTP status map (docs/provider-coverage.md).

export interface ErrorBody {
  code: string;
  details: string | null;
  hint: string | null;
  message: string;
}

/** An error answered as `{code, details, hint, message}` with its status (and headers such as WWW-Authenticate). */
export class PgrstError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly details: string | null = null,
    readonly hint: string | null = null,
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
  }

  body(): ErrorBody {
    return { code: this.code, details: this.details, hint: this.hint, message: this.message };
  }
}

/** A `"failed to parse <what>" (line 1, column N)` syntax error, the way PostgREST words its parser errors. */
export function parseError(what: string, column: number, details: string): PgrstError {
  return new PgrstError(400, 'PGRST100', `"failed to parse ${what}" (line 1, column ${column})`, details);
}

export function tableNotFound(table: string, suggestion: string | undefined, version: number): PgrstError {
  if (version < 13) return new PgrstError(404, '42P01', `relation "public.${table}" does not exist`);
  return new PgrstError(
    404,
    'PGRST205',
    `Could not find the table 'public.${table}' in the schema cache`,
    null,
    suggestion ? `Perhaps you meant the table 'public.${suggestion}'` : null,
  );
}

export function columnNotFound(table: string, column: string): PgrstError {
  return new PgrstError(400, 'PGRST204', `Could not find the '${column}' column of '${table}' in the schema cache`);
}

export function invalidBody(message: string): PgrstError {
  return new PgrstError(400, 'PGRST102', message);
}

export function invalidRange(details: string): PgrstError {
  return new PgrstError(416, 'PGRST103', 'Requested range not satisfiable', details);
}

/** What pg-safeupdate raises for an UPDATE/DELETE without WHERE (Supabase loads it for the API roles). */
export function safeUpdateError(command: 'UPDATE' | 'DELETE'): PgrstError {
  return fromPostgres({ code: '21000', message: `${command} requires a WHERE clause` }, false);
}

/** Status of a Postgres error as PostgREST maps it; `authed` is false when the request ran as the anon role. */
function statusOfSqlState(code: string, message: string, authed: boolean): number {
  const exact: Record<string, number> = { '23503': 409, '23505': 409, '25006': 405, '42P01': 404, '42P17': 500, '53400': 500, '57P01': 503, P0001: 400 };
  if (code in exact) return exact[code];
  if (code === '42501') return authed ? 403 : 401;
  if (code === '21000') return message.endsWith('requires a WHERE clause') ? 400 : 500;
  if (code === '22023') return message.startsWith('role') && message.endsWith('does not exist') ? 401 : 400;
  if (code === '42883') return 404;
  const byClass: Record<string, number> = {
    '08': 503,
    '09': 500,
    '0L': 403,
    '0P': 403,
    '25': 500,
    '28': 403,
    '2D': 500,
    '38': 500,
    '39': 500,
    '3B': 500,
    '40': 500,
    '53': 503,
    '54': 500,
    '55': 500,
    '57': 500,
    '58': 500,
    F0: 500,
    HV: 500,
    P0: 500,
    XX: 500,
  };
  return byClass[code.slice(0, 2)] ?? 400;
}

interface PostgresErrorLike {
  code?: string;
  message: string;
  detail?: string;
  hint?: string;
}

/** Turns an error raised by Postgres (PGlite) into the PostgREST answer, keyed on its SQLSTATE. */
export function fromPostgres(err: PostgresErrorLike, authed: boolean): PgrstError {
  const code = err.code ?? 'XX000';
  const status = statusOfSqlState(code, err.message, authed);
  const headers: Record<string, string> = status === 401 ? { 'www-authenticate': 'Bearer' } : {};
  return new PgrstError(status, code, err.message, err.detail ?? null, err.hint ?? null, headers);
}

/** Levenshtein similarity in [0, 1]; PostgREST suggests a table when the best score is at least 0.75. */
export function similarity(a: string, b: string): number {
  const prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    let diagonal = prev[0];
    prev[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const above = prev[j];
      prev[j] = Math.min(prev[j] + 1, prev[j - 1] + 1, diagonal + (a[i - 1] === b[j - 1] ? 0 : 1));
      diagonal = above;
    }
  }
  const longest = Math.max(a.length, b.length);
  return longest === 0 ? 1 : 1 - prev[b.length] / longest;
}

export function closestName(name: string, candidates: Iterable<string>, minScore = 0.75): string | undefined {
  let best: string | undefined;
  let bestScore = minScore;
  for (const candidate of candidates) {
    const score = similarity(name.toLowerCase(), candidate.toLowerCase());
    if (score >= bestScore) [best, bestScore] = [candidate, score];
  }
  return best;
}
