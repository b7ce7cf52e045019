// `npm run demo`: the demo data set (runtime/demo-data.ts) on embedded storage. Logs go to stderr (warnings
// only unless LOG_LEVEL says otherwise); then ONE JSON line on stdout, the last line it prints:
// {base_url, server_id, api_key, owner_token, operator_token, email, password, sandboxes, env_file}.
// The same values are written as shell variables to env_file (DEMO_ENV_FILE, default ./demo.env, mode 0600)
// once the line is out, and removed when the demo stops: `. ./demo.env` loads them into a shell.
// Runs until SIGINT/SIGTERM. PORT and DATA_DIR are honoured.
import { rename, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { startDemo } from './demo-data.ts';

/** `export NAME='value'` lines; a single quote inside a value is closed, escaped and reopened. */
export function shellExports(values: Record<string, string>): string {
  return Object.entries(values)
    .map(([name, value]) => `export ${name.toUpperCase()}='${value.replaceAll("'", `'\\''`)}'\n`)
    .join('');
}

async function main(): Promise<void> {
  const demo = await startDemo({ ...process.env, LOG_LEVEL: process.env.LOG_LEVEL || 'warn' });
  const envFile = path.resolve(process.env.DEMO_ENV_FILE || 'demo.env');
  const values = {
    base_url: demo.service.url,
    server_id: demo.serverId,
    api_key: demo.apiKey,
    owner_token: demo.owner.token,
    operator_token: demo.service.operatorToken,
    email: demo.owner.email,
    password: demo.owner.password,
  };
  const sandboxUrls = Object.fromEntries(Object.entries(demo.sandboxes).map(([name, url]) => [`${name}_url`, url]));
  process.stderr.write(`Demo ready: open ${values.base_url} and sign in with the e-mail and password below. Stop it with Ctrl-C.\n`);
  process.stdout.write(JSON.stringify({ ...values, sandboxes: demo.sandboxes, env_file: envFile }) + '\n');
  // Written whole or not at all: a shell waiting for the file never reads half of it.
  await writeFile(`${envFile}.tmp`, shellExports({ ...values, ...sandboxUrls }), { mode: 0o600 });
  await rename(`${envFile}.tmp`, envFile);
  const stop = async () => {
    await rm(envFile, { force: true });
    await demo.close();
    process.exit(0);
  };
  process.once('SIGINT', () => void stop());
  process.once('SIGTERM', () => void stop());
}

main().catch((err) => {
  console.error(err instanceof Error ? err.message : err);
  process.exit(1);
});
