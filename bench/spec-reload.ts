// `npm run bench:specs`: what hot reload of the tool specs costs, on the 26 specs of tool-specs/ and on a few
// hundred (tool-specs/ copied 12 times, each copy a provider of its own). Side by side in one run, with a full
// load of the folder (what every change cost before reloads kept unchanged files) as the reference:
// - the periodic check (runtime/toolspec/watch.ts, Fingerprint): every second, stat every spec file, and hash
//   those changed in the last seconds (just after a deploy: all of them);
// - a reload after one file changed, and one after nothing changed (an event from an editor's swap file).
// Prints wall and CPU milliseconds (medians of BENCH_SPEC_RUNS, default 30) and the ratio of CPU time to a
// full load's (CPU time holds still on a busy machine; wall time does not); nothing leaves this machine.
import { cp, mkdir, mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pluginRegistry } from '../plugins/registry.ts';
import type { Catalog } from '../runtime/toolspec/catalog.ts';
import { CHECK_EVERY_MS } from '../runtime/toolspec/live.ts';
import { loadCatalog } from '../runtime/toolspec/loader.ts';
import { Fingerprint } from '../runtime/toolspec/watch.ts';

const RUNS = Number(process.env.BENCH_SPEC_RUNS || 30);
const COPIES = 12;

/** tool-specs/ as it is, or copied `copies` times with provider and tool ids made unique. */
async function specFolder(copies: number): Promise<string> {
  const dir = await mkdtemp(path.join(tmpdir(), 'bench-specs-'));
  if (copies === 1) {
    await cp(path.resolve('tool-specs'), dir, { recursive: true });
    return dir;
  }
  for (const provider of await readdir(path.resolve('tool-specs'))) {
    for (let k = 1; k <= copies; k++) {
      const id = `${provider}_${k}`;
      await mkdir(path.join(dir, id));
      for (const name of await readdir(path.resolve('tool-specs', provider))) {
        const text = await readFile(path.resolve('tool-specs', provider, name), 'utf8');
        const renamed =
          name === 'provider.yaml'
            ? text.replace(/^id: .*$/m, `id: ${id}`)
            : text.replace(/^id: (.*)$/m, `id: c${k}_$1`).replace(/^provider: .*$/m, `provider: ${id}`);
        await writeFile(path.join(dir, id, name), renamed);
      }
    }
  }
  return dir;
}

/** Median milliseconds and CPU milliseconds of `run`, over RUNS runs after one warm-up. */
async function time(run: () => unknown): Promise<{ ms: number; cpu: number }> {
  await run();
  const wall: number[] = [];
  const cpu: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    const c0 = process.cpuUsage();
    const t0 = performance.now();
    await run();
    wall.push(performance.now() - t0);
    const c = process.cpuUsage(c0);
    cpu.push((c.user + c.system) / 1000);
  }
  const median = (xs: number[]) => xs.sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  return { ms: median(wall), cpu: median(cpu) };
}

/** Nanoseconds in a millisecond (file times are in nanoseconds). */
const NS = 1_000_000n;

async function measure(copies: number): Promise<void> {
  const dir = await specFolder(copies);
  const full = await time(() => loadCatalog(dir, pluginRegistry));
  let catalog: Catalog = await loadCatalog(dir, pluginRegistry);
  const unchanged = await time(async () => (catalog = await loadCatalog(dir, pluginRegistry, { previous: catalog })));
  const file = path.join(dir, (await readdir(dir)).sort()[0], 'provider.yaml');
  const first = (await readdir(path.dirname(file))).find((n) => n !== 'provider.yaml')!;
  const edited = path.join(path.dirname(file), first);
  const original = await readFile(edited, 'utf8');
  let n = 0;
  const oneChanged = await time(async () => {
    // Any change of the text compiles the file again.
    await writeFile(edited, `${original}\n# edit ${n++}\n`);
    catalog = await loadCatalog(dir, pluginRegistry, { previous: catalog });
  });
  // Seen from a minute later, every file is older than the window of hashing (the steady state); seen from the
  // epoch, every file is recent and hashed (the seconds after a deploy).
  const later = BigInt(Date.now()) * NS + 60_000n * NS;
  const reference = Fingerprint.take(dir, later);
  const steady = await time(() => Fingerprint.take(dir, later).same(reference));
  const hashedReference = Fingerprint.take(dir, 0n);
  const afterDeploy = await time(() => Fingerprint.take(dir, 0n).same(hashedReference));
  const tools = catalog.tools.size;
  const files = tools + catalog.providers.size;
  const row = (what: string, r: { ms: number; cpu: number }) =>
    `| ${tools} tools (${files} files) | ${what} | ${r.ms.toFixed(2)} | ${r.cpu.toFixed(2)} | ${(r.cpu / full.cpu).toFixed(3)} |`;
  console.log(row('full load (reference)', full));
  console.log(row('reload, one file changed', oneChanged));
  console.log(row('reload, nothing changed', unchanged));
  console.log(row('periodic check, steady', steady));
  console.log(row('periodic check, every file just written', afterDeploy));
  console.log(
    `| ${tools} tools (${files} files) | periodic check: share of one core | ${((100 * steady.cpu) / CHECK_EVERY_MS).toFixed(3)} % steady, ${((100 * afterDeploy.cpu) / CHECK_EVERY_MS).toFixed(3)} % for the 10 s after a deploy | | |`,
  );
  await rm(dir, { recursive: true, force: true });
}

console.log(`runs per row: ${RUNS} (median); the check runs every ${CHECK_EVERY_MS} ms\n`);
console.log('| specs | what | ms | CPU ms | CPU, ratio to a full load |');
console.log('|---|---|---|---|---|');
await measure(1);
await measure(COPIES);
