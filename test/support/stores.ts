// The stores a suite of the store port runs on: the embedded store in memory and on disk always, MongoDB when
// MONGODB_URL is set (a fresh database per store, dropped when the suite ends). Under CI=true a missing
// MONGODB_URL fails the suite instead of skipping its MongoDB cases (.ci/run starts a server).
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { MongoClient } from 'mongodb';
import { afterAll, expect, it } from 'vitest';
import { openEmbeddedStore } from '../../runtime/store/embedded.ts';
import { openMongoStore } from '../../runtime/store/mongodb.ts';
import type { Store } from '../../runtime/store/port.ts';

export const MONGODB_URL = process.env.MONGODB_URL;

export interface StoreTarget {
  name: string;
  enabled: boolean;
  open: () => Promise<Store>;
}

/**
 * Under CI a suite's MongoDB tests must run: without MONGODB_URL this adds a failing test instead of letting them
 * be skipped; elsewhere it says once, loudly, what is skipped.
 */
export function requireMongoUnderCi(): void {
  if (MONGODB_URL) return;
  if (process.env.CI === 'true') {
    it('has a MongoDB server to run on (CI sets MONGODB_URL)', () => {
      throw new Error('MONGODB_URL is not set: under CI every MongoDB test must run (.ci/run starts one)');
    });
  } else {
    console.warn(
      `MongoDB tests SKIPPED in ${expect.getState().testPath ?? 'this suite'}: no MONGODB_URL (start one: eval "$(npm run -s peer:mongo -- start)")`,
    );
  }
}

/** The targets of a suite (call at the top of a test file: it registers the clean-up). */
export function storeTargets(prefix: string): StoreTarget[] {
  const dirs: string[] = [];
  const databases: string[] = [];
  afterAll(async () => {
    await Promise.all(dirs.map((dir) => rm(dir, { recursive: true, force: true })));
    if (!MONGODB_URL || databases.length === 0) return;
    const client = await new MongoClient(MONGODB_URL).connect();
    try {
      for (const name of databases) await client.db(name).dropDatabase();
    } finally {
      await client.close();
    }
  });
  requireMongoUnderCi();
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
      open: () => {
        const name = `${prefix.replace(/\W/g, '_')}_${process.pid}_${Date.now()}_${databases.length}`;
        databases.push(name);
        return openMongoStore(MONGODB_URL!, name);
      },
    },
  ];
}
