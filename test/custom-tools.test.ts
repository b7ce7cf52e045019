// Custom tools and stored accounts over real HTTP with the fixture provider: account fields validated and
// secrets masked, defaults and locked parameters (in tools/list and on a call), invalid defaults and duplicate
// names refused, nothing secret on disk or in the logs, everything kept across a restart on the same DATA_DIR.
import { mkdtemp, readFile, readdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { connectV1 } from './support/mcp-clients.ts';
import { createOwner, createServer, startTestService } from './support/service.ts';
import { DEMO_SPECS as SPECS, useDemoUpstream } from './support/upstream.ts';

const demo = useDemoUpstream();
const demoAccount = demo.account;

describe('stored accounts, custom tools and restarts', () => {
  it('validates account fields, masks secrets, and keeps everything across a restart on the same DATA_DIR', async () => {
    const dataDir = await mkdtemp(path.join(tmpdir(), 'tool-server-disk-'));
    let svc = await startTestService(SPECS, { onDisk: dataDir });
    const owner = await createOwner(svc, 20);

    const bad = await svc.call('POST', '/api/accounts', { token: owner.token, body: { kind: 'demo', name: 'x', base_url: 'ftp://nope', token: 'tok_1' } });
    expect(bad.body).toEqual({ error: 'Bad Request', message: '"base_url" (Base URL) must be an http(s) URL' });
    const pattern = await svc.call('POST', '/api/accounts', {
      token: owner.token,
      body: { kind: 'demo', name: 'x', base_url: demo.upstream.url, token: 'nope' },
    });
    expect(pattern.body.message).toBe('"token" (Token) must start with tok_');
    const kind = await svc.call('POST', '/api/accounts', { token: owner.token, body: { kind: 'mail', name: 'x' } });
    expect(kind.body.message).toMatch(/^"kind" must be one of: demo/);

    const { serverId, key, accountIds } = await createServer(svc, owner, {
      accounts: demoAccount(),
      tools: [{ base_tool: 'demo_echo', name: 'shout', account: 'demo', defaults: { status: 200, channel: 'random', message: 'hello' }, locked: ['channel'] }],
    });
    const shown = await svc.call('GET', `/api/accounts/${accountIds.demo}`, { token: owner.token });
    expect(shown.body).toMatchObject({ id: accountIds.demo, kind: 'demo', name: 'Demo', base_url: demo.upstream.url, secret_hint: 'token: ••••1234' });
    expect(JSON.stringify(shown.body)).not.toContain(demo.upstream.token);
    const verified = await svc.call('POST', `/api/accounts/${accountIds.demo}/verify`, { token: owner.token });
    expect(verified.body).toMatchObject({ id: accountIds.demo, verified: true, detail: 'Demo upstream accepted the credentials (GET /me).' });

    // Defaults show and become optional; locked parameters disappear and cannot be set.
    const client = await connectV1(svc.url, serverId, key);
    const [tool] = (await client.listTools()).tools;
    expect(tool.name).toBe('shout');
    expect(tool.inputSchema.properties).toMatchObject({ message: { default: 'hello' }, status: { default: 200 } });
    expect(tool.inputSchema.properties).not.toHaveProperty('channel');
    expect(tool.inputSchema.required).toBeUndefined();
    const called = await client.callTool({ name: 'shout', arguments: {} });
    expect(called.structuredContent).toEqual({ echo: 'hello', channel: 'random' });
    const override = await client.callTool({ name: 'shout', arguments: { channel: 'general' } });
    expect(override.isError).toBe(true);
    expect((override.content as Array<{ text: string }>)[0].text).toBe('Invalid arguments: "channel" is fixed by this server and cannot be set');
    await client.close();

    const badDefaults = await svc.call('POST', `/api/servers/${serverId}/tools`, {
      token: owner.token,
      body: { base_tool: 'demo_echo', name: 'x', account_id: accountIds.demo, defaults: { status: 99 } },
    });
    expect(badDefaults.body.message).toBe('"defaults" are not valid for demo_echo: "status" must be >= 200');
    const dup = await svc.call('POST', `/api/servers/${serverId}/tools`, {
      token: owner.token,
      body: { base_tool: 'demo_ping', name: 'shout', account_id: accountIds.demo },
    });
    expect(dup.status).toBe(409);

    await svc.close();
    // Nothing secret on disk in clear: not the key, not the account token.
    const files = await readdir(dataDir);
    const disk = (await Promise.all(files.map((f) => readFile(path.join(dataDir, f), 'utf8')))).join('\n');
    expect(disk).not.toContain(key);
    expect(disk).not.toContain(demo.upstream.token);
    expect(svc.logs.join('\n')).not.toContain(key);
    expect(svc.logs.join('\n')).not.toContain(demo.upstream.token);

    svc = await startTestService(SPECS, { onDisk: dataDir });
    const again = await connectV1(svc.url, serverId, key);
    const after = await again.callTool({ name: 'shout', arguments: { message: 'again' } });
    expect(after.structuredContent).toEqual({ echo: 'again', channel: 'random' });
    expect((await svc.call('GET', '/api/credits', { token: owner.token })).body.balance).toBe(16);
    await again.close();
    await svc.close();
  });
});
