// The MongoDB-wire server of the test runs: MONGODB_URL, as `npm run -s peer:mongo -- start` prints it (FerretDB)
// and `.ci/run` exports it. Without it: one loud warning and the MongoDB tests skipped locally; with CI=true
// a missing server fails the run.
import { MongoClient } from 'mongodb';

export const MONGODB_URL = process.env.MONGODB_URL || undefined;

if (!MONGODB_URL) {
  const message =
    '\n*** MongoDB tests need MONGODB_URL: eval "$(npm run -s peer:mongo -- start)"; export MONGODB_URL (FerretDB, built with Go); they are SKIPPED ***\n';
  if (process.env.CI === 'true') throw new Error(message);
  console.warn(message);
}

let databases = 0;
const created: string[] = [];

/**
 * MONGODB_URL naming a database of its own (`<prefix>_<pid>_<time>_<n>`, dropped by dropTestDatabases), with
 * extra connection-string options when given (e.g. { monitorCommands: 'true' }).
 */
export function mongoTestUrl(prefix: string, options: Record<string, string> = {}): { url: string; dbName: string } {
  if (!MONGODB_URL) throw new Error('MONGODB_URL is not set');
  const dbName = `${prefix}_${process.pid}_${Date.now()}_${databases++}`;
  created.push(dbName);
  return { url: withDatabase(MONGODB_URL, dbName, options), dbName };
}

/** The same server and options, another database, more options. */
export function withDatabase(url: string, dbName: string, options: Record<string, string> = {}): string {
  const parsed = /^(mongodb(?:\+srv)?:\/\/[^/?#]*)\/?([^?#]*)(?:\?([^#]*))?/.exec(url);
  if (!parsed) throw new Error(`not a MongoDB URL: ${url}`);
  const query = new URLSearchParams(parsed[3] ?? '');
  for (const [key, value] of Object.entries(options)) query.set(key, value);
  const search = query.toString();
  return `${parsed[1]}/${dbName}${search ? `?${search}` : ''}`;
}

/** Drops every database mongoTestUrl named (call in afterAll). */
export async function dropTestDatabases(): Promise<void> {
  if (!MONGODB_URL || created.length === 0) return;
  const client = await new MongoClient(MONGODB_URL).connect();
  try {
    for (const name of created.splice(0)) await client.db(name).dropDatabase();
  } finally {
    await client.close();
  }
}
