// The catalog in use, and its hot reload: when a file under tool-specs/ changes, the whole set is loaded
// again; a good set replaces the catalog at once, a bad one is reported and the last good catalog stays.
import { type FSWatcher, watch } from 'node:fs';
import type { Logger } from '../log.ts';
import type { PluginRegistry } from '../plugin-api.ts';
import type { Catalog } from './catalog.ts';
import { SpecLoadError, formatIssue, loadCatalog } from './loader.ts';

/** Where components read the catalog at the moment they need it (never keep a copy). */
export interface CatalogSource {
  readonly current: Catalog;
  onChange(listener: (catalog: Catalog) => void): void;
}

export class LiveCatalog implements CatalogSource {
  private listeners: Array<(catalog: Catalog) => void> = [];
  private watcher?: FSWatcher;
  private timer?: NodeJS.Timeout;

  constructor(public current: Catalog) {}

  onChange(listener: (catalog: Catalog) => void): void {
    this.listeners.push(listener);
  }

  /** Reloads `dir` now; resolves true when the new set was taken. */
  async reload(dir: string, plugins: PluginRegistry, logger: Logger): Promise<boolean> {
    try {
      const next = await loadCatalog(dir, plugins);
      this.current = next;
      for (const listener of this.listeners) listener(next);
      logger.info({ tools: next.tools.size, providers: next.providers.size }, 'tool specs reloaded');
      return true;
    } catch (err) {
      if (!(err instanceof SpecLoadError)) throw err;
      logger.error({ problems: err.issues.map(formatIssue) }, 'tool specs not reloaded: keeping the last good catalog');
      return false;
    }
  }

  /** Watches `dir` (recursively) and reloads a short while after the last change. */
  watch(dir: string, plugins: PluginRegistry, logger: Logger): void {
    this.watcher = watch(dir, { recursive: true }, () => {
      clearTimeout(this.timer);
      this.timer = setTimeout(() => void this.reload(dir, plugins, logger).catch((err) => logger.error({ err }, 'tool spec reload failed')), 250);
    });
    this.watcher.on('error', (err) => logger.error({ err }, 'cannot watch the tool specs'));
  }

  close(): void {
    clearTimeout(this.timer);
    this.watcher?.close();
  }
}
