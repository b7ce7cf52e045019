// The catalog in use, and its reloads. A reload loads the whole spec folder again, keeping what unchanged
// files compiled to (so it costs what changed); a good set replaces the catalog at once, a set with any
// problem is reported with every problem (file:line:col) and the last good catalog stays in use. Reloads
// run one at a time: on a change in the folder (watch.ts), and on demand (SIGHUP, the operator API).
import type { Logger } from '../log.ts';
import type { PluginRegistry } from '../plugin-api.ts';
import type { Catalog } from './catalog.ts';
import { SpecLoadError, formatIssue, loadCatalog } from './loader.ts';
import { Fingerprint, FolderWatchers } from './watch.ts';

/** Where components read the catalog at the moment they need it (never keep a copy). */
export interface CatalogSource {
  readonly current: Catalog;
  /** Called after each reload that took a set: one that changed something, or one an operator asked for. */
  onReload(listener: (outcome: ReloadOutcome) => void): void;
}

/** Ids added, removed and changed (recompiled: its file or its provider's changed). */
export interface Changes {
  added: string[];
  removed: string[];
  changed: string[];
}

export interface ReloadOutcome {
  /** False: the set has problems and the last good catalog stays in use. */
  ok: boolean;
  /** What asked for it: `watch` (an event in the folder), `check` (the periodic check), `SIGHUP`, `api`. */
  trigger: string;
  tools: Changes;
  providers: Changes;
  /** Every problem, as `file:line:col json-path message`. */
  problems: string[];
  /** The catalog in use afterwards. */
  catalog: { tools: number; providers: number };
  ms: number;
}

/** The spec folder and what loading it needs. */
export interface SpecFolder {
  dir: string;
  plugins: PluginRegistry;
  logger: Logger;
}

/** An editor's save is several events: a reload waits until they have been quiet this long... */
const SETTLE_MS = 100;
/** ...but not longer than this after the first. */
const MAX_SETTLE_MS = 300;
/** The periodic check of the files, for changes no event reported. */
export const CHECK_EVERY_MS = 1000;

const NO_CHANGES: Changes = { added: [], removed: [], changed: [] };

export class LiveCatalog implements CatalogSource {
  private readonly listeners: Array<(outcome: ReloadOutcome) => void> = [];
  private watchers?: FolderWatchers;
  private checkTimer?: NodeJS.Timeout;
  private settleTimer?: NodeJS.Timeout;
  /** The first change seen since the last reload started: when, and how (`watch` or `check`). */
  private firstSeen?: { at: number; trigger: string };
  /** The reload under way (or the last one); the next one starts after it. */
  private running: Promise<unknown> = Promise.resolve();
  /** The next reload, shared by everyone who asks before it starts. */
  private queued?: { trigger: string; force: boolean; outcome: Promise<ReloadOutcome | undefined> };

  private constructor(
    private readonly folder: SpecFolder,
    public current: Catalog,
    /** The files as the last load found them (whether or not it succeeded): what the check compares with. */
    private loaded: Fingerprint,
  ) {}

  /** Loads the folder; throws SpecLoadError with every problem (the service does not start on a bad set). */
  static async open(folder: SpecFolder): Promise<LiveCatalog> {
    const seen = Fingerprint.take(folder.dir);
    return new LiveCatalog(folder, await loadCatalog(folder.dir, folder.plugins), seen);
  }

  onReload(listener: (outcome: ReloadOutcome) => void): void {
    this.listeners.push(listener);
  }

  /** Reloads now (after a reload under way), whether or not the files look changed; says what changed. */
  async reload(trigger: string): Promise<ReloadOutcome> {
    return (await this.schedule(trigger, true))!;
  }

  /** Reloads whenever the folder changes: on its events, and when the check every second finds a difference. */
  watch(): void {
    this.watchers = new FolderWatchers(this.folder.dir, () => this.changeSeen('watch'), this.folder.logger);
    this.watchers.sync();
    this.checkTimer = setInterval(() => {
      this.watchers?.sync();
      if (!Fingerprint.take(this.folder.dir).same(this.loaded)) this.changeSeen('check');
    }, CHECK_EVERY_MS);
    this.checkTimer.unref();
  }

  close(): void {
    clearInterval(this.checkTimer);
    clearTimeout(this.settleTimer);
    this.watchers?.close();
  }

  /** A change seen (an event, or a difference the check found): a reload once the writes have settled. */
  private changeSeen(trigger: string): void {
    const now = Date.now();
    const first = (this.firstSeen ??= { at: now, trigger });
    clearTimeout(this.settleTimer);
    this.settleTimer = setTimeout(
      () => {
        this.firstSeen = undefined;
        // Only if the files differ from those of the last load; a failure is logged by `schedule`.
        this.schedule(first.trigger, false).catch(() => undefined);
      },
      Math.max(0, Math.min(SETTLE_MS, first.at + MAX_SETTLE_MS - now)),
    );
  }

  /** Queues a reload after the one under way; a forced request makes the queued one forced. */
  private schedule(trigger: string, force: boolean): Promise<ReloadOutcome | undefined> {
    if (this.queued) {
      if (force && !this.queued.force) Object.assign(this.queued, { trigger, force });
      return this.queued.outcome;
    }
    const queued = { trigger, force, outcome: Promise.resolve<ReloadOutcome | undefined>(undefined) };
    queued.outcome = this.running.then(() => {
      this.queued = undefined;
      return this.load(queued.trigger, queued.force).catch((err) => {
        this.folder.logger.error({ err, trigger: queued.trigger }, 'tool spec reload failed');
        throw err;
      });
    });
    this.queued = queued;
    this.running = queued.outcome.catch(() => undefined);
    return queued.outcome;
  }

  /** One reload; unless forced, only when the files differ from those of the last load. */
  private async load(trigger: string, force: boolean): Promise<ReloadOutcome | undefined> {
    const { dir, plugins, logger } = this.folder;
    // Watchers first: a file added to a new folder from now on is seen.
    this.watchers?.sync();
    const seen = Fingerprint.take(dir);
    if (!force && seen.same(this.loaded)) return undefined;
    this.loaded = seen;
    const started = performance.now();
    const ms = () => Math.round(performance.now() - started);
    let next: Catalog;
    try {
      next = await loadCatalog(dir, plugins, { previous: this.current });
    } catch (err) {
      const problems = err instanceof SpecLoadError ? err.issues.map(formatIssue) : [`${dir}: ${(err as Error).message}`];
      logger.error({ trigger, problems }, 'tool specs not reloaded: keeping the last good catalog');
      return { ok: false, trigger, tools: NO_CHANGES, providers: NO_CHANGES, problems, catalog: sizes(this.current), ms: ms() };
    }
    const tools = changes(this.current.tools, next.tools);
    const providers = changes(this.current.providers, next.providers);
    const changed = [tools, providers].some((c) => c.added.length + c.removed.length + c.changed.length > 0);
    if (changed) this.current = next;
    const outcome: ReloadOutcome = { ok: true, trigger, tools, providers, problems: [], catalog: sizes(this.current), ms: ms() };
    if (!changed && !force) {
      logger.debug({ trigger }, 'tool spec files touched, nothing changed');
      return outcome;
    }
    logger.info(
      { trigger, tools, providers, catalog: outcome.catalog, ms: outcome.ms },
      changed ? 'tool specs reloaded' : 'tool specs reloaded: nothing changed',
    );
    for (const listener of this.listeners) {
      try {
        listener(outcome);
      } catch (err) {
        logger.error({ err }, 'a listener of tool spec reloads failed');
      }
    }
    return outcome;
  }
}

const sizes = (c: Catalog) => ({ tools: c.tools.size, providers: c.providers.size });

/** What differs between two maps of compiled specs: an unchanged spec is the same object (LoadOptions.previous). */
function changes<T>(before: ReadonlyMap<string, T>, after: ReadonlyMap<string, T>): Changes {
  return {
    added: [...after.keys()].filter((id) => !before.has(id)),
    removed: [...before.keys()].filter((id) => !after.has(id)),
    changed: [...after].filter(([id, value]) => before.has(id) && before.get(id) !== value).map(([id]) => id),
  };
}
