// The service as a real process (`node --import tsx runtime/main.ts`, what `npm start` runs), its output
// captured, and the URL it listens on once it says so.
import { type ChildProcess, spawn } from 'node:child_process';

export interface ServiceProcess {
  child: ChildProcess;
  output: () => string;
  url: Promise<string>;
  exit: Promise<number | null>;
}

/** Starts `runtime/main.ts`; the embedded store unless env names MONGODB_URL, e-mail off unless it names SMTP_URL (the suite's own are not passed on). */
export function startServiceProcess(env: Record<string, string>): ServiceProcess {
  // The service under test gets the suite's network safety net too.
  const child = spawn(process.execPath, ['--import', 'tsx', '--import', './test/support/loopback-only.ts', 'runtime/main.ts'], {
    env: { ...process.env, HOST: '127.0.0.1', PORT: '0', LOG_LEVEL: 'warn', WATCH_SPECS: 'false', MONGODB_URL: '', SMTP_URL: '', MAIL_FROM: '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout!.on('data', (d) => (out += d));
  child.stderr!.on('data', (d) => (out += d));
  const url = new Promise<string>((resolve, reject) => {
    const check = () => {
      const m = /listening on (http:\/\/\S+)/.exec(out);
      if (m) resolve(m[1]);
    };
    child.stderr!.on('data', check);
    child.once('exit', () => reject(new Error(`exited before listening: ${out}`)));
  });
  const exit = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return { child, output: () => out, url, exit };
}
