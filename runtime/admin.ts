// `npm run admin -- <command>`: operator tasks from a shell, through the running service's operator API
// (so the embedded store files are never written behind the service's back).
//   npm run admin -- create-owner <email>
//   npm run admin -- grant <owner-id> <amount>      (a negative amount debits, never below zero)
//   npm run admin -- check-ledger [owner-id]
//   npm run admin -- reload-specs                   (this instance's tool specs; fails on a refused set)
// The service is found at ADMIN_URL (default http://127.0.0.1:$PORT, PORT default 3000); the operator token
// comes from OPERATOR_TOKEN or DATA_DIR/operator-token.
import { readFile } from 'node:fs/promises';
import path from 'node:path';

const USAGE = 'usage: npm run admin -- create-owner <email> | grant <owner-id> <amount> | check-ledger [owner-id] | reload-specs';

async function operatorToken(): Promise<string> {
  if (process.env.OPERATOR_TOKEN) return process.env.OPERATOR_TOKEN;
  const file = path.resolve(process.env.DATA_DIR || '.data', 'operator-token');
  try {
    return (await readFile(file, 'utf8')).trim();
  } catch {
    throw new Error(`No operator token: set OPERATOR_TOKEN, or run from the folder whose DATA_DIR holds ${file}`);
  }
}

async function main(argv: string[]): Promise<void> {
  const [command, ...rest] = argv;
  const base = process.env.ADMIN_URL || `http://127.0.0.1:${process.env.PORT || 3000}`;
  let request: { path: string; body?: unknown; method?: 'POST' };
  if (command === 'create-owner' && rest.length === 1) request = { path: '/api/admin/owners', body: { email: rest[0] } };
  else if (command === 'grant' && rest.length === 2 && /^-?\d+$/.test(rest[1])) {
    request = { path: `/api/admin/owners/${encodeURIComponent(rest[0])}/credits`, body: { amount: Number(rest[1]) } };
  } else if (command === 'check-ledger' && rest.length <= 1) {
    request = { path: `/api/admin/ledger/check${rest[0] ? `?owner=${encodeURIComponent(rest[0])}` : ''}` };
  } else if (command === 'reload-specs' && rest.length === 0) request = { path: '/api/admin/specs/reload', method: 'POST' };
  else throw new Error(USAGE);
  const token = await operatorToken();
  let res: Response;
  try {
    res = await fetch(base + request.path, {
      method: request.method ?? (request.body === undefined ? 'GET' : 'POST'),
      headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
      body: request.body === undefined ? undefined : JSON.stringify(request.body),
    });
  } catch {
    throw new Error(
      `The service is not reachable at ${base}. Start it (npm start) or set ADMIN_URL: admin commands go through the running service and never write its store directly.`,
    );
  }
  const text = await res.text();
  if (!res.ok) throw new Error(`${res.status}: ${text}`);
  console.log(text);
  // check-ledger: a broken invariant is a failure of the command too.
  if (command === 'check-ledger' && !(JSON.parse(text) as { ok: boolean }).ok) process.exitCode = 2;
}

main(process.argv.slice(2)).catch((err: Error) => {
  console.error(err.message);
  process.exit(1);
});
