// The service's own provider sandboxes (sandboxes/in-service.ts), so an owner can try every tool without
// credentials of any provider. One set per owner, each sandbox started on the first request that owner's
// sandbox accounts send to it, all stopped after `idleMs` without use (the data then starts again from the
// seed), at most `maxSets` sets at once, each taking in at most `maxWriteBytes` of request bodies between two
// starts (what an owner writes into it stays in this process's memory). Each sandbox listens on a unix socket in a folder only this
// process's user can open (0700) and is reached only through the agents lease() hands to the outbound client
// for requests of accounts the service itself created as sandbox accounts: no TCP port, no opening of the
// outbound guard, and one owner's requests never reach another owner's set.
import { createHmac } from 'node:crypto';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { SharedDatabase } from '../../sandboxes/postgrest/postgrest-sandbox.ts';
import { SANDBOX_DEFINITIONS, type SandboxDefinition, type ServedSandbox, isSandboxHost } from '../../sandboxes/in-service.ts';
import type { Logger } from '../log.ts';
import { ToolError } from '../tool-error.ts';
import type { Catalog } from '../toolspec/catalog.ts';
import type { CatalogSource } from '../toolspec/live.ts';
import { replaySandboxes } from './replay.ts';

export { isSandboxHost };

/** The connection to one sandbox host for one request; release() when the request is over. */
export interface SandboxLease {
  agents: { http: http.Agent; https: https.Agent };
  release(): void;
}

/** What the outbound client needs: a lease on an owner's sandbox host, or undefined when no sandbox has that name. */
export interface SandboxRouter {
  /** `writeBytes`: the size of the request's body, counted against what the owner's set may take in. */
  lease(ownerId: string, hostname: string, writeBytes?: number): Promise<SandboxLease | undefined>;
}

export interface SandboxesOptions {
  /** Derives every owner's sandbox credentials (the same at every start of the service). */
  secret: Buffer;
  idleMs: number;
  maxSets: number;
  /** Request bodies one owner's set takes in between two starts; beyond, its requests with a body are refused. */
  maxWriteBytes?: number;
  logger: Logger;
  /** The simulators of providers (default: the four of sandboxes/in-service.ts). */
  definitions?: readonly SandboxDefinition[];
  /** The catalog in use: a provider with exchanges and no simulator is served from its exchanges. */
  catalog?: CatalogSource;
}

interface Running {
  served: ServedSandbox;
  agents: Map<string, SandboxLease['agents']>;
  usesDatabase: boolean;
}

interface OwnerSet {
  ownerId: string;
  lastUsed: number;
  leases: number;
  /** Bytes of request bodies taken in since the set started. */
  written: number;
  /** By account kind: one sandbox per provider, whatever reload made its definition. */
  running: Map<string, Promise<Running>>;
}

export class Sandboxes implements SandboxRouter {
  private readonly simulators: readonly SandboxDefinition[];
  /** The definitions of each catalog (simulators first, then providers served from their exchanges). */
  private readonly perCatalog = new WeakMap<Catalog, readonly SandboxDefinition[]>();
  private readonly sets = new Map<string, OwnerSet>();
  private database?: Promise<SharedDatabase>;
  private databaseUsers = 0;
  private sockets = 0;
  /** Where the sockets are, made with the first sandbox (most services never start one). */
  private folder?: Promise<string>;
  private readonly sweeper: NodeJS.Timeout;
  private closed = false;

  constructor(private readonly options: SandboxesOptions) {
    this.simulators = options.definitions ?? SANDBOX_DEFINITIONS;
    this.sweeper = setInterval(() => void this.sweep(), Math.min(60_000, Math.max(1000, options.idleMs / 4)));
    this.sweeper.unref();
  }

  /** Every sandbox the service serves now: its simulators, and the providers of the catalog served from exchanges. */
  get definitions(): readonly SandboxDefinition[] {
    const catalog = this.options.catalog;
    if (!catalog) return this.simulators;
    let defs = this.perCatalog.get(catalog.current);
    if (!defs) {
      defs = [...this.simulators, ...replaySandboxes(catalog, new Set(this.simulators.map((d) => d.kind)))];
      this.perCatalog.set(catalog.current, defs);
    }
    return defs;
  }

  get idleMinutes(): number {
    return Math.round(this.options.idleMs / 60_000);
  }

  /** The fields of an owner's account for a sandbox, as POST /api/accounts takes them. */
  accountFields(ownerId: string, def: SandboxDefinition): Record<string, string> {
    return def.account(this.secretOf(ownerId));
  }

  /** Sets running now, and the sandboxes in them. */
  stats(): { sets: number; sandboxes: number } {
    return { sets: this.sets.size, sandboxes: [...this.sets.values()].reduce((n, s) => n + s.running.size, 0) };
  }

  async lease(ownerId: string, hostname: string, writeBytes = 0): Promise<SandboxLease | undefined> {
    const host = hostname.toLowerCase().replace(/\.$/, '');
    const def = this.definitions.find((d) => d.hosts.includes(host));
    if (!def) return undefined;
    const set = this.setOf(ownerId);
    const max = this.options.maxWriteBytes ?? Infinity;
    if (writeBytes > 0 && set.written + writeBytes > max) {
      const size = (n: number) => (n < 1_048_576 ? `${Math.ceil(n / 1024)} KB` : `${(n / 1_048_576).toFixed(1)} MB`);
      const idle = `${this.idleMinutes} minute${this.idleMinutes === 1 ? '' : 's'}`;
      throw new ToolError(
        'sandbox_full',
        `Your sandbox accounts took in ${size(set.written)} of data since they started, and may take in ${size(max)}: nothing more is written to them until they start again from their seed data, after ${idle} unused. Reading still works`,
        { refund: true },
      );
    }
    set.written += writeBytes;
    set.leases++;
    try {
      const running = await this.started(set, def);
      let released = false;
      return {
        agents: running.agents.get(host)!,
        release: () => {
          if (released) return;
          released = true;
          set.leases--;
          set.lastUsed = Date.now();
        },
      };
    } catch (err) {
      set.leases--;
      throw err;
    }
  }

  /** Starts every sandbox of an owner's set in the background (the first call then finds them ready). */
  warmUp(ownerId: string): void {
    let set: OwnerSet;
    try {
      set = this.setOf(ownerId);
    } catch {
      return; // every set is in use: the first call says so
    }
    for (const def of this.definitions) this.started(set, def).catch(() => undefined);
  }

  /** Stops the sets nobody used for idleMs (and that no request is using). */
  async sweep(now = Date.now()): Promise<void> {
    const idle = [...this.sets.values()].filter((s) => s.leases === 0 && now - s.lastUsed >= this.options.idleMs);
    await Promise.all(idle.map((s) => this.stop(s)));
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    clearInterval(this.sweeper);
    await Promise.all([...this.sets.values()].map((s) => this.stop(s)));
    if (this.folder) await rm(await this.folder, { recursive: true, force: true });
  }

  private secretOf(ownerId: string): (label: string) => string {
    return (label) => createHmac('sha256', this.options.secret).update(`${ownerId}\0${label}`).digest('base64url').slice(0, 32);
  }

  private setOf(ownerId: string): OwnerSet {
    let set = this.sets.get(ownerId);
    if (set) {
      set.lastUsed = Date.now();
      return set;
    }
    if (this.closed) throw new ToolError('sandbox_unavailable', 'The service is shutting down; try again shortly', { retryable: true });
    if (this.sets.size >= this.options.maxSets) {
      throw new ToolError(
        'sandbox_unavailable',
        `All ${this.options.maxSets} sandbox sets of this service are in use; try again in a few minutes (an unused set stops after ${this.idleMinutes} minutes)`,
        { retryable: true },
      );
    }
    set = { ownerId, lastUsed: Date.now(), leases: 0, written: 0, running: new Map() };
    this.sets.set(ownerId, set);
    return set;
  }

  private started(set: OwnerSet, def: SandboxDefinition): Promise<Running> {
    let running = set.running.get(def.kind);
    if (!running) {
      running = this.start(set, def);
      set.running.set(def.kind, running);
      // A sandbox that failed to start is tried again by the next request.
      running.catch(() => set.running.get(def.kind) === running && set.running.delete(def.kind));
    }
    return running;
  }

  private async start(set: OwnerSet, def: SandboxDefinition): Promise<Running> {
    const began = performance.now();
    let usesDatabase = false;
    try {
      this.folder ??= socketFolder();
      const folder = await this.folder;
      const sockets = Object.fromEntries(def.hosts.map((host) => [host, { path: path.join(folder, `${++this.sockets}.sock`), url: `https://${host}` }]));
      const served = await def.start({
        sockets,
        secret: this.secretOf(set.ownerId),
        database: () => {
          usesDatabase = true;
          return this.acquireDatabase();
        },
      });
      const agents = new Map(def.hosts.map((host) => [host, socketAgents(sockets[host].path)]));
      this.options.logger.info({ ownerId: set.ownerId, sandbox: def.kind, ms: Math.round(performance.now() - began), sets: this.sets.size }, 'sandbox started');
      return { served, agents, usesDatabase };
    } catch (err) {
      if (usesDatabase) await this.releaseDatabase();
      this.options.logger.error({ err, ownerId: set.ownerId, sandbox: def.kind }, 'sandbox failed to start');
      throw new ToolError('sandbox_unavailable', `The ${def.name} sandbox could not start; try again`, { retryable: true });
    }
  }

  private async stop(set: OwnerSet): Promise<void> {
    if (this.sets.get(set.ownerId) !== set) return;
    this.sets.delete(set.ownerId);
    const stopped = await Promise.allSettled(
      [...set.running.values()].map(async (pending) => {
        const running = await pending;
        for (const { http: a, https: b } of running.agents.values()) {
          a.destroy();
          b.destroy();
        }
        await running.served.close();
        if (running.usesDatabase) await this.releaseDatabase();
      }),
    );
    for (const result of stopped) {
      // One that never started has nothing to stop; a failure to stop is logged and the rest goes on.
      if (result.status === 'rejected' && !(result.reason instanceof ToolError))
        this.options.logger.error({ err: result.reason, ownerId: set.ownerId }, 'sandbox failed to stop');
    }
    this.options.logger.info({ ownerId: set.ownerId, sets: this.sets.size }, 'sandbox set stopped');
  }

  /** The one Postgres of every owner's database sandbox, started with the first and closed after the last. */
  private acquireDatabase(): Promise<SharedDatabase> {
    this.databaseUsers++;
    if (!this.database) {
      const starting = SharedDatabase.start();
      starting.catch(() => this.database === starting && (this.database = undefined));
      this.database = starting;
    }
    return this.database;
  }

  private async releaseDatabase(): Promise<void> {
    if (--this.databaseUsers > 0 || !this.database) return;
    const database = this.database;
    this.database = undefined;
    await (await database.catch(() => undefined))?.close();
  }
}

const FOLDER_PREFIX = 'tool-server-sandboxes-';

/**
 * A new folder for this process's sockets, 0700 (mkdtemp): no other user of the machine can open them. The
 * folders of processes that ended without closing theirs (kill -9) are removed first; the pid is in the name.
 */
async function socketFolder(): Promise<string> {
  for (const name of await readdir(tmpdir())) {
    const pid = Number(new RegExp(`^${FOLDER_PREFIX}(\\d+)-`).exec(name)?.[1]);
    if (pid && pid !== process.pid && !alive(pid)) await rm(path.join(tmpdir(), name), { recursive: true, force: true }).catch(() => undefined);
  }
  return mkdtemp(path.join(tmpdir(), `${FOLDER_PREFIX}${process.pid}-`));
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    // EPERM: it runs, as another user.
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Keep-alive agents whose every connection is a new connection to the unix socket at `socketPath`. */
function socketAgents(socketPath: string): SandboxLease['agents'] {
  const connect = () => net.connect(socketPath);
  // The https agent connects without TLS too: the socket never leaves this process's folder, and account
  // URLs keep the https:// form real providers use.
  const agents = { http: new http.Agent({ keepAlive: true }), https: new https.Agent({ keepAlive: true }) };
  for (const agent of [agents.http, agents.https]) (agent as unknown as { createConnection: typeof connect }).createConnection = connect;
  return agents;
}
