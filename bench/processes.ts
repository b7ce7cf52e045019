// The benchmark's servers, each in its own process (`tsx bench/<file>`), announcing itself with one JSON line.
import { type ChildProcess, spawn } from 'node:child_process';
import { createInterface } from 'node:readline';

export const children: ChildProcess[] = [];

/**
 * Starts `tsx bench/<file>` and waits for the JSON line it prints. `env` adds to the environment;
 * BENCH_NODE_FLAGS there adds node flags.
 */
export async function launch(file: string, args: string[] = [], env: Record<string, string> = {}): Promise<Record<string, string>> {
  const all = { ...process.env, ...env };
  const flags = (all.BENCH_NODE_FLAGS ?? '').split(' ').filter(Boolean);
  const child = spawn(process.execPath, [...flags, '--import', 'tsx', `bench/${file}`, ...args], { stdio: ['ignore', 'pipe', 'inherit'], env: all });
  children.push(child);
  const lines = createInterface({ input: child.stdout! });
  return new Promise((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`${file} exited with ${code}`)));
    lines.once('line', (line) => resolve(JSON.parse(line) as Record<string, string>));
  });
}

/** Runs a bench script; whatever happens, the processes it launched are stopped. */
export function runBench(main: () => Promise<void>): void {
  main()
    .catch((err) => {
      console.error(err);
      process.exitCode = 1;
    })
    .finally(() => {
      for (const c of children) c.kill();
    });
}
