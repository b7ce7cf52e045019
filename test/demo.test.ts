// `npm run demo` as the README tells a person to start it: the README's one line, run by bash, starts the
// demo in the background and loads its values into the shell; the JSON line is the last thing the demo
// prints; the values work; stopping the demo removes its file.
import { spawn } from 'node:child_process';
import { existsSync, openSync, readFileSync, writeFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { connectV2 } from './support/mcp-clients.ts';

/** The README's line that starts the demo and loads its values (the only line of its block). */
function readmeLine(): string {
  const readme = readFileSync('README.md', 'utf8');
  const line = readme.split('\n').find((l) => l.includes('npm run -s demo &'));
  if (!line) throw new Error('README.md has no line starting the demo in the background');
  return line;
}

describe('npm run demo', () => {
  it("starts with the README's line, prints its JSON line last and loads its values into the shell", async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'tool-server-demo-test-'));
    const envFile = path.join(dir, 'demo.env');
    const output = path.join(dir, 'output');
    // The documented line, with the env file in a folder of the test's own instead of ./demo.env.
    const line = readmeLine().replace(/(?<![\w/.-])(?:\.\/)?demo\.env/g, envFile);
    expect(line).toContain(`. ${envFile}`);
    // Job control on, as in a person's interactive shell: the demo is a job of its own that `kill %1` stops whole.
    const script = `set -m
${line}
echo "LOADED $BASE_URL $SERVER_ID $API_KEY $JIRA_URL $SUPABASE_URL"
until [ -e ${dir}/stop ]; do sleep 0.2; done
group=$(jobs -p %1)
kill %1
wait
# npm may end before the demo it started: the stop is over when no process of the job is left.
while kill -0 -- -$group 2>/dev/null; do sleep 0.2; done`;
    // Everything the shell and the demo print goes to one file, in the order it was written.
    const out = openSync(output, 'a');
    const shell = spawn('bash', ['-c', script], {
      cwd: process.cwd(),
      stdio: ['ignore', out, out],
      // The demo gets the suite's network safety net; a free port; its env file where the line expects it; the
      // shell of a fresh machine (no MONGODB_URL or SMTP_URL: the test runs export them for the suites that need them).
      env: { ...withoutPeers(process.env), PORT: '0', DEMO_ENV_FILE: envFile, NODE_OPTIONS: '--import tsx --import ./test/support/loopback-only.ts' },
    });
    const exited = new Promise<number | null>((resolve) => shell.once('exit', resolve));
    try {
      const text = () => readFileSync(output, 'utf8');
      await expect.poll(() => /LOADED /.test(text()) || shell.exitCode !== null, { timeout: 150_000, interval: 250 }).toBe(true);
      const all = text().trimEnd().split('\n');
      const lines = all.slice(0, all.findIndex((l) => l.startsWith('LOADED ')) + 1);
      const loaded = lines.pop()!.split(' ');
      // What the demo printed: the ready line, then its JSON line last.
      const json = JSON.parse(lines.at(-1)!);
      expect(lines.at(-2)).toMatch(/^Demo ready: open http:\/\/127\.0\.0\.1:\d+ /);
      expect(Object.keys(json)).toEqual(['base_url', 'server_id', 'api_key', 'owner_token', 'operator_token', 'email', 'password', 'sandboxes', 'env_file']);
      expect(json.sandboxes).toEqual({
        jira: expect.stringMatching(/^http:\/\/127\.0\.0\.1:\d+$/),
        jira_gateway: expect.stringMatching(/^http:\/\/127\.0\.0\.1:\d+$/),
        n8n: expect.stringMatching(/^http:\/\/127\.0\.0\.1:\d+$/),
        notion: expect.stringMatching(/^http:\/\/127\.0\.0\.1:\d+$/),
        supabase: expect.stringMatching(/^http:\/\/127\.0\.0\.1:\d+$/),
      });
      expect(json.env_file).toBe(envFile);
      // The shell has the same values.
      expect(loaded).toEqual(['LOADED', json.base_url, json.server_id, json.api_key, json.sandboxes.jira, json.sandboxes.supabase]);

      const client = await connectV2(json.base_url, json.server_id, json.api_key);
      const result = await client.callTool({ name: 'database_read_records', arguments: { table: 'todos' } });
      expect(result.isError).toBeFalsy();
      await client.close();
      expect((await fetch(`${json.sandboxes.n8n}/healthz`)).status).toBe(200);
    } finally {
      writeFileSync(path.join(dir, 'stop'), '');
      await exited;
    }
    expect(existsSync(envFile)).toBe(false);
    await rm(dir, { recursive: true, force: true });
  }, 200_000);
});

function withoutPeers(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const { MONGODB_URL: _mongo, SMTP_URL: _smtp, MAILPIT_URL: _mailpit, ...rest } = env;
  return rest;
}
