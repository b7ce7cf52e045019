// The benchmark's servers, each in its own process (`tsx bench/<file>`), announcing itself with one JSON line.
import { type ChildProcess, spawn } from 'node:child_process';
import { createInterface } from 'node:readline';

export const children: ChildProcess[] = [];

/** Starts `tsx bench/<file>` and waits for the JSON line it prints. */
export async function launch(file: string, ...args: string[]): Promise<Record<string, string>> {
  const child = spawn(process.execPath, ['--import', 'tsx', `bench/${file}`, ...args], { stdio: ['ignore', 'pipe', 'inherit'] });
  children.push(child);
  const lines = createInterface({ input: child.stdout! });
  return new Promise((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`${file} exited with ${code}`)));
    lines.once('line', (line) => resolve(JSON.parse(line) as Record<string, string>));
  });
}
