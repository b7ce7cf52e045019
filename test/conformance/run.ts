// Runs the official MCP conformance scenarios and the MCP Inspector CLI against a live instance (not part of
// `npm test`: both need Node 22, which npx fetches from the npm registry).
//   npx tsx test/conformance/run.ts
// The conformance suite cannot send an Authorization header, so a tiny loopback proxy adds the key.
import { spawn } from 'node:child_process';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { startJiraSandbox } from '../../sandboxes/jira/jira-sandbox.ts';
import { createOwner, createServer, startTestService } from '../support/service.ts';

const jira = await startJiraSandbox();
const svc = await startTestService({ LOG_LEVEL: 'warn' });
const owner = await createOwner(svc, 1000);
const { serverId, key } = await createServer(svc, owner, {
  accounts: { jira: { kind: 'tracker', name: 'Jira', site_url: jira.url, email: jira.credentials.email, api_token: jira.credentials.apiToken } },
  tools: [
    { base_tool: 'tracker_get_issue', account: 'jira' },
    { base_tool: 'tracker_get_projects', account: 'jira' },
  ],
});
const target = new URL(`${svc.url}/mcp/${serverId}`);

const proxy = http.createServer((req, res) => {
  const upstream = http.request(
    {
      host: target.hostname,
      port: target.port,
      path: target.pathname,
      method: req.method,
      headers: { ...req.headers, host: target.host, authorization: `Bearer ${key}` },
    },
    (up) => {
      res.writeHead(up.statusCode ?? 502, up.headers);
      up.pipe(res);
    },
  );
  req.pipe(upstream);
});
await new Promise<void>((r) => proxy.listen(0, '127.0.0.1', () => r()));
const proxied = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}/mcp/${serverId}`;

const results: Array<[string, boolean]> = [];
// Asynchronous on purpose: the service under test runs in this process and must keep answering.
const run = (label: string, args: string[]) =>
  new Promise<void>((resolve) => {
    const child = spawn('npx', ['-y', '-p', 'node@22', ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (out += d));
    child.on('close', (code) => {
      const lines = out.split('\n').filter((l) => !l.startsWith('npm warn'));
      console.log(`\n=== ${label} (exit ${code})\n${lines.slice(-20).join('\n')}`);
      results.push([label, code === 0]);
      resolve();
    });
  });
for (const scenario of ['server-initialize', 'ping', 'tools-list']) {
  await run(`conformance ${scenario}`, ['-p', '@modelcontextprotocol/conformance@0.1.16', 'conformance', 'server', '--url', proxied, '--scenario', scenario]);
}
const inspector = [
  '-p',
  '@modelcontextprotocol/inspector@2.12.0',
  'mcp-inspector',
  '--cli',
  target.href,
  '--transport',
  'http',
  '--header',
  `Authorization: Bearer ${key}`,
];
for (const era of ['legacy', 'modern']) {
  await run(`inspector ${era} tools/list`, [...inspector, '--method', 'tools/list', '--protocol-era', era]);
  await run(`inspector ${era} tools/call`, [
    ...inspector,
    '--method',
    'tools/call',
    '--tool-name',
    'tracker_get_issue',
    '--tool-arg',
    'issue_key=DEMO-1',
    '--protocol-era',
    era,
  ]);
}
console.log('\nsummary:');
for (const [label, ok] of results) console.log(`${ok ? 'PASS' : 'FAIL'} ${label}`);
proxy.close();
await svc.close();
await jira.close();
process.exit(results.every(([, ok]) => ok) ? 0 : 1);
