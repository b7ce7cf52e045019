// The stores a suite of the store port runs on: the embedded store in memory and on disk always, MongoDB when
// MONGODB_URL is set (a database of its own per store, dropped when the suite ends; see mongo.ts for what
// happens without it, locally and under CI).
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll } from 'vitest';
import { openEmbeddedStore } from '../../runtime/store/embedded.ts';
import { openMongoStore } from '../../runtime/store/mongodb.ts';
import type { Store } from '../../runtime/store/port.ts';
import { MONGODB_URL, dropTestDatabases, mongoTestUrl } from './mongo.ts';

export interface StoreTarget {
  name: string;
  enabled: boolean;
  /** `slowReads`: a test whose queries read every record (FerretDB scans) gets a longer deadline on MongoDB. */
  open: (o?: { slowReads?: boolean }) => Promise<Store>;
}

/** The deadline of a store operation where a test's queries scan (FerretDB on a busy 2-core machine). */
const SLOW_READS_DEADLINE_MS = 20_000;

/** The targets of a suite (call at the top of a test file: it registers the clean-up). */
export function storeTargets(prefix: string): StoreTarget[] {
  const dirs: string[] = [];
  afterAll(async () => {
    await Promise.all(dirs.map((dir) => rm(dir, { recursive: true, force: true })));
    await dropTestDatabases();
  });
  return [
    { name: 'embedded, in memory', enabled: true, open: () => openEmbeddedStore() },
    {
      name: 'embedded, on disk',
      enabled: true,
      open: async () => {
        const dir = await mkdtemp(path.join(tmpdir(), `${prefix}-`));
        dirs.push(dir);
        return openEmbeddedStore({ dir });
      },
    },
    {
      name: 'MongoDB (MONGODB_URL)',
      enabled: Boolean(MONGODB_URL),
      open: (o = {}) => {
        const { url, dbName } = mongoTestUrl(prefix.replace(/\W/g, '_'));
        return openMongoStore(url, { dbName, ...(o.slowReads ? { deadlineMs: SLOW_READS_DEADLINE_MS } : {}) });
      },
    },
  ];
}
