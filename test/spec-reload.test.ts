// Hot reload of tool-specs/: a new tool appears without a restart; a broken file is reported and the last
// good catalog stays in use.
import { cp, mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { type Owner, type TestService, createOwner, startTestService } from './support/service.ts';

let dir: string;
let svc: TestService;
let owner: Owner;

beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'specs-live-'));
  await cp(path.resolve('test/fixtures/specs'), dir, { recursive: true });
  svc = await startTestService({ TOOL_SPECS_DIR: dir });
  owner = await createOwner(svc, 10);
});

afterAll(() => svc?.close());

const catalogIds = async () => ((await svc.call('GET', '/api/catalog', { token: owner.token })).body.tools as Array<{ id: string }>).map((t) => t.id);

it('picks up a new tool spec without a restart', async () => {
  expect(await catalogIds()).toEqual(['demo_echo', 'demo_move', 'demo_ping']);
  const ping = await readFile(path.join(dir, 'demo/ping.yaml'), 'utf8');
  await writeFile(path.join(dir, 'demo/pong.yaml'), ping.replace('id: demo_ping', 'id: demo_pong').replace('title: Ping', 'title: Pong'));
  await expect.poll(catalogIds, { timeout: 5000 }).toEqual(['demo_echo', 'demo_move', 'demo_ping', 'demo_pong']);
});

it('keeps the last good catalog when a change breaks it, and says what is wrong', async () => {
  await writeFile(path.join(dir, 'demo/broken.yaml'), 'id: demo_broken\nprovider: demo\n');
  await expect.poll(() => svc.logs.some((l) => l.includes('tool specs not reloaded')), { timeout: 5000 }).toBe(true);
  const line = JSON.parse(svc.logs.find((l) => l.includes('tool specs not reloaded'))!);
  expect(line.problems).toContain(`${path.relative(process.cwd(), path.join(dir, 'demo/broken.yaml'))}:1:1 / missing required property "title"`);
  expect(await catalogIds()).toEqual(['demo_echo', 'demo_move', 'demo_ping', 'demo_pong']);
});
