// How the service talks to MongoDB, set in code rather than left to the URL: majority and journaled writes,
// primary reads, a bounded pool, a deadline on every operation, retryable reads and writes. Kept apart from
// the adapter (no driver import) so that the configuration can check a URL before anything connects.

export interface MongoOptions {
  /**
   * Connections per process (the driver's maxPoolSize). A process also keeps 2 monitoring connections per
   * member of the replica set: the README's "Connections" sizes this against a cluster's limit.
   */
  poolSize: number;
  /**
   * How long one store operation may take in all: finding a usable server (a primary during a failover), a
   * free connection, the server's work (maxTimeMS of reads) and a majority's acknowledgement of a write
   * (wtimeoutMS). Past it the operation fails with StoreUnavailableError and the request answers 503.
   */
  deadlineMs: number;
  /**
   * A connection with no answer for this long is closed. An operation given up at its deadline may still be
   * waiting on its connection until then, and a write sent may still be applied.
   */
  socketTimeoutMs: number;
  /** Accept a URL that asks for w=0, w=1 or journal=false. */
  allowWeakWrites: boolean;
}

export const DEFAULT_MONGO_OPTIONS: MongoOptions = {
  poolSize: 20,
  deadlineMs: 3000,
  socketTimeoutMs: 30_000,
  allowWeakWrites: false,
};

export interface WriteConcern {
  w: number | string;
  journal: boolean;
}

export class WeakWriteConcernError extends Error {
  override readonly name = 'WeakWriteConcernError';
}

/**
 * The write concern every write uses: `majority` and journaled, unless the URL names another w that is not
 * weaker (a number of at least 2, or a tag set name). A URL asking for w=0, w=1 or journal=false is refused
 * unless allowWeakWrites: with it, a failover can roll back a write that was acknowledged (a charge lost
 * while its call ran and was recorded).
 */
export function writeConcernFor(url: string, allowWeakWrites: boolean): WriteConcern {
  const query = new Map<string, string>();
  const search = /\?([^#]*)/.exec(url)?.[1] ?? '';
  for (const [key, value] of new URLSearchParams(search)) query.set(key.toLowerCase(), value);
  const w = query.get('w');
  const journal = query.get('journal') ?? query.get('j');
  const weak: string[] = [];
  if (w === '0' || w === '1') weak.push(`w=${w}`);
  if (journal === 'false') weak.push(`${query.has('journal') ? 'journal' : 'j'}=false`);
  if (weak.length > 0 && !allowWeakWrites) {
    throw new WeakWriteConcernError(
      `MONGODB_URL asks for ${weak.join(' and ')}: a write acknowledged that way can be rolled back by a failover (a charge lost while ` +
        'its call ran). Remove it (the service writes with w=majority and journal=true), or set MONGODB_ALLOW_WEAK_WRITES=true to accept the risk',
    );
  }
  return {
    w: w === undefined || w === '' ? 'majority' : /^\d+$/.test(w) ? Number(w) : w,
    journal: journal !== 'false',
  };
}
