// The build `npm start` runs (runtime/build.ts): the service bundled by esbuild, run by plain node (no tsx),
// finds the files it reads at run time where the sources are, and is rebuilt when a source changes.
import { readFileSync } from 'node:fs';
import { rm, utimes } from 'node:fs/promises';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { NODE_FLAGS, buildService, staleness } from '../runtime/build.ts';
import { startServiceProcess } from './support/process.ts';

// Inside the repository, where the bundles find node_modules; one folder per run of this file.
const OUT = `node_modules/.cache/build-test-${process.pid}`;
const ENTRIES = ['runtime/main.ts', 'test/support/loopback-only.ts'];

afterAll(() => rm(OUT, { recursive: true, force: true }));

describe('the production build', () => {
  it('serves from the bundle alone: readiness, the dashboard views and assets, an MCP refusal', async () => {
    await buildService(ENTRIES, OUT);
    const dir = path.resolve(OUT);
    const svc = startServiceProcess(
      { DATA_DIR: path.join(dir, 'data') },
      { program: [...NODE_FLAGS, '--import', pathToFileURL(path.join(dir, 'loopback-only.js')).href, path.join(dir, 'main.js')] },
    );
    try {
      const url = await svc.url;
      expect((await fetch(`${url}/readyz`)).status).toBe(200);
      const login = await fetch(`${url}/login`);
      expect(login.status).toBe(200);
      const page = await login.text();
      expect(page).toContain('<form');
      const asset = /(?:src|href)="(\/assets\/[^"]+)"/.exec(page)?.[1];
      expect(asset, 'the login page links an asset').toBeDefined();
      expect((await fetch(url + asset)).status).toBe(200);
      const refused = await fetch(`${url}/mcp/nothing`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json' },
        body: '{}',
      });
      expect(refused.status).toBe(401);
    } finally {
      svc.child.kill();
      await svc.exit;
    }
  });

  it('is what `npm start` and `npm run demo` run, with the node flags the bench runs it with', () => {
    const scripts = (JSON.parse(readFileSync('package.json', 'utf8')) as { scripts: Record<string, string> }).scripts;
    expect(scripts.start).toBe(`node ${NODE_FLAGS.join(' ')} dist/main.js`);
    expect(scripts.demo).toBe(`node ${NODE_FLAGS.join(' ')} dist/demo.js`);
  });

  it('is stale when a source it bundled changed after it was built, and up to date otherwise', async () => {
    const entries = ['runtime/secrets.ts'];
    const out = `${OUT}-stale`;
    try {
      expect(await staleness(entries, out)).toBe('no build yet');
      await buildService(entries, out);
      expect(await staleness(entries, out)).toBeUndefined();
      expect(await staleness(['runtime/main.ts'], out)).toBe('other entries');
      const later = new Date(Date.now() + 60_000);
      await utimes('runtime/secrets.ts', later, later);
      expect(await staleness(entries, out)).toBe('runtime/secrets.ts changed');
    } finally {
      const now = new Date();
      await utimes('runtime/secrets.ts', now, now);
      await rm(out, { recursive: true, force: true });
    }
  });
});
