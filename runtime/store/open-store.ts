// Chooses the adapter: MongoDB when a URL is configured, otherwise the embedded store (file-backed in
// dataDir, or in memory).
import { openEmbeddedStore } from './embedded.ts';
import type { MongoOptions } from './mongo-options.ts';
import { openMongoStore } from './mongodb.ts';
import type { Store, StoreEvents } from './port.ts';

export interface StoreConfig {
  mongodbUrl?: string;
  /** Pool, timeouts and write-concern override of the MongoDB adapter (defaults in mongo-options.ts). */
  mongo?: Partial<MongoOptions>;
  /** Folder of the embedded store's files. Ignored with mongodbUrl. */
  dataDir?: string;
  /** Embedded store in memory (tests); wins over dataDir. */
  inMemory?: boolean;
  /** What the store tells the log (once each): it cannot take writes, and why; it takes them again. */
  events?: StoreEvents;
  /** Past this offset between the host's clock and the store's, the service refuses writes (clock.ts). */
  maxClockOffsetMs?: number;
}

export async function openStore(config: StoreConfig): Promise<Store> {
  if (config.mongodbUrl)
    return openMongoStore(config.mongodbUrl, Object.assign({}, config.mongo, config.events, { maxClockOffsetMs: config.maxClockOffsetMs }));
  if (config.inMemory) return openEmbeddedStore();
  if (!config.dataDir) throw new Error('the store needs mongodbUrl, dataDir or inMemory');
  return openEmbeddedStore({ dir: config.dataDir, ...config.events });
}
