// `npm start` runs the service from a build, not through tsx: tsx compiles every module when it is first loaded
// and, to keep function names, wraps every function it creates in a call that names it (keepNames), which
// costs on every closure of every request. The build (esbuild, the compiler tsx itself uses) bundles
// runtime/main.ts and runtime/demo.ts with what they import of this repository into dist/ (packages stay in
// node_modules), with source maps: run with --enable-source-maps, stack traces name the TypeScript sources.
//
// `tsx runtime/build.ts` builds when dist/ is missing or older than any of its sources (or this file), else
// does nothing (a few milliseconds: one stat per source); `--force` always builds. The tests, the bench and the
// scripts run the TypeScript sources with tsx; only `npm start` and `npm run demo` run the build.
//
// Files read at run time (the dashboard's views and assets, the tool-spec schemas, plugin modules loaded in
// worker threads) stay where they are: each module's `import.meta.url` is rewritten to its source file's
// URL, so every path a module builds from it is the same as when tsx runs the sources.
import { mkdir, readFile, rename, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { type BuildOptions, type Plugin, build } from 'esbuild';

const ROOT = path.resolve(fileURLToPath(new URL('..', import.meta.url)));
const THIS_FILE = fileURLToPath(import.meta.url);
/**
 * The node flags `npm start` and `npm run demo` run the build with (package.json says them again; a test holds the
 * two together). --no-flush-bytecode: V8 otherwise drops the bytecode, and with it the optimized code, of functions
 * that did not run through a few of its major collections, and the housekeeping that runs once a minute (the
 * roll-up, settlement, the ledger's caps, the store's walks) was compiled again on its next run. Measured at
 * 1,500 calls/s, c=32, after the first 40 s: TurboFan's compile time fell from 195-371 ms to 122-236 ms every
 * 8 s; the CPU per call moved less than the machine's noise (docs/bench.md). It keeps a few MB of bytecode.
 * --max-semi-space-size=32 (MB; V8's default here is 16): each call's objects live until its answer, so at c=32 every
 * young-generation collection copied the objects of the calls in flight, and a young generation twice as large
 * copies them half as often. 16 alternations of 3,000 calls at c=32 on the memory store: 980 -> 899 CPU µs a call
 * (on the file store, and for the bare proxy, which holds little per call: within the noise; docs/bench.md). Under
 * load the young generation may take 32 MB more.
 */
export const NODE_FLAGS = ['--enable-source-maps', '--no-flush-bytecode', '--max-semi-space-size=32'];
/** What `npm start` and `npm run demo` run, from runtime/. */
export const SERVICE_ENTRIES = ['runtime/main.ts', 'runtime/demo.ts'];
const META = 'build-meta.json';

interface BuildMeta {
  /** When the build read its sources: a source changed after this makes the build stale. */
  startedAt: number;
  /** The repository's files the build read (relative to the repository), this file included. */
  inputs: string[];
  /** The entries and the output folder, as given. */
  entries: string[];
}

/** Each module's import.meta.url as its source file's URL, written relative to the bundle so the repository may move. */
function sourceUrls(outdir: string): Plugin {
  return {
    name: 'source-import-meta-url',
    setup(b) {
      b.onLoad({ filter: /\.ts$/ }, async (args) => {
        const text = await readFile(args.path, 'utf8');
        if (!text.includes('import.meta.url')) return undefined;
        const relative = path.relative(outdir, args.path).split(path.sep).join('/');
        return { contents: text.replaceAll('import.meta.url', `new URL(${JSON.stringify(relative)}, import.meta.url).href`), loader: 'ts' };
      });
    },
  };
}

/** The options of every build of this repository (the service's, the bench's); `root`: another checkout of it. */
export function buildOptions(entries: string[], outdir: string, root = ROOT): BuildOptions {
  return {
    absWorkingDir: root,
    // Every bundle at the top of outdir (named after its entry), where sourceUrls writes paths from.
    entryPoints: entries.map((file) => ({ in: file, out: path.basename(file, '.ts') })),
    outdir,
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    // Packages are loaded from node_modules as they are (some find their own files at run time).
    packages: 'external',
    sourcemap: 'linked',
    sourcesContent: false,
    // Names as written are kept anyway for everything but bundle-wide clashes; tsx's keepNames would also wrap every closure.
    keepNames: false,
    metafile: true,
    write: false,
    logLevel: 'warning',
    plugins: [sourceUrls(path.resolve(root, outdir))],
  };
}

/**
 * Builds `entries` into `outdir` (relative to the repository). Each file is written under a temporary name and
 * renamed, so a process starting meanwhile (or a second build) never loads half a file.
 */
export async function buildService(entries = SERVICE_ENTRIES, outdir = 'dist', root = ROOT): Promise<void> {
  const startedAt = Date.now();
  const result = await build(buildOptions(entries, outdir, root));
  const dir = path.resolve(root, outdir);
  const meta: BuildMeta = { startedAt, inputs: [...Object.keys(result.metafile!.inputs), path.relative(root, THIS_FILE)], entries };
  const files = [...result.outputFiles!.map((f) => ({ path: f.path, contents: f.contents })), { path: path.join(dir, META), contents: JSON.stringify(meta) }];
  // Maps before code, the meta last: a build that stops midway is found stale.
  files.sort((a, b) => rank(a.path) - rank(b.path));
  for (const file of files) {
    await mkdir(path.dirname(file.path), { recursive: true });
    const temporary = `${file.path}.${process.pid}.tmp`;
    await writeFile(temporary, file.contents);
    await rename(temporary, file.path);
  }
}
const rank = (file: string) => (file.endsWith('.map') ? 0 : file.endsWith(META) ? 2 : 1);

/** Why `outdir` must be built again, or undefined when it is up to date with its sources. */
export async function staleness(entries = SERVICE_ENTRIES, outdir = 'dist'): Promise<string | undefined> {
  const meta = (await readFile(path.resolve(ROOT, outdir, META), 'utf8')
    .then((text) => JSON.parse(text) as BuildMeta)
    .catch(() => undefined)) as BuildMeta | undefined;
  if (!meta) return 'no build yet';
  if (meta.entries.join() !== entries.join()) return 'other entries';
  for (const input of meta.inputs) {
    const changed = await stat(path.resolve(ROOT, input)).then(
      (s) => s.mtimeMs >= meta.startedAt,
      () => true,
    );
    if (changed) return `${input} changed`;
  }
  return undefined;
}

if (process.argv[1] === THIS_FILE) {
  const force = process.argv.includes('--force');
  const why = force ? 'asked to' : await staleness();
  if (why) {
    const started = Date.now();
    await buildService();
    console.error(`built dist/ (${why}) in ${Date.now() - started} ms`);
  }
}
