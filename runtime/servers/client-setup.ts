// Ready-to-paste set-up of a server in the MCP clients people use, with the real endpoint URL.
// Formats follow each client's documentation (README "Connect a client" names the sources).

export interface Snippet {
  id: string;
  client: string;
  where: string;
  code: string;
}

const KEY_PLACEHOLDER = '<YOUR_API_KEY>';

/** A config key / CLI name for the server: letters, digits and dashes. */
const slug = (name: string) =>
  name
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-|-$/g, '') || 'tool-server';

/**
 * Clients that sign in with OAuth need nothing but the URL: they are sent to this service's consent page, and no
 * key is copied anywhere. First on a server's page (the way the README leads with).
 */
export function oauthSnippet(url: string): Snippet {
  return {
    id: 'oauth',
    client: 'URL only (OAuth)',
    where:
      'Chat apps\' custom connectors, IDEs\' "add server by URL" and other clients that sign in with OAuth: give them this URL. They send you here to approve them and choose what they may do; no key to copy.',
    code: url,
  };
}

/** `call`: the curl snippet calls this tool instead of listing the tools. */
export function connectSnippets(
  url: string,
  serverName: string,
  key = KEY_PLACEHOLDER,
  call?: { name: string; arguments: Record<string, unknown> },
): Snippet[] {
  const name = slug(serverName);
  const json = (v: unknown) => JSON.stringify(v, null, 2);
  const auth = `Bearer ${key}`;
  return [
    {
      id: 'claude-code',
      client: 'Claude Code',
      where: 'Run in a terminal (add --scope project to share it through .mcp.json)',
      code: `claude mcp add --transport http ${name} ${url} \\\n  --header "Authorization: ${auth}"`,
    },
    {
      id: 'claude-desktop',
      client: 'Claude Desktop',
      where: 'claude_desktop_config.json (Settings > Developer > Edit Config); mcp-remote bridges the remote server with the key header',
      code: json({
        mcpServers: { [name]: { command: 'npx', args: ['-y', 'mcp-remote', url, '--header', 'Authorization:${AUTH_HEADER}'], env: { AUTH_HEADER: auth } } },
      }),
    },
    {
      id: 'cursor',
      client: 'Cursor',
      where: '~/.cursor/mcp.json (all projects) or .cursor/mcp.json (this project)',
      code: json({ mcpServers: { [name]: { url, headers: { Authorization: auth } } } }),
    },
    {
      id: 'vscode',
      client: 'VS Code',
      where: '.vscode/mcp.json (VS Code asks for the key once and stores it securely)',
      code: json({
        inputs: [{ type: 'promptString', id: `${name}-key`, description: `API key of ${serverName}`, password: true }],
        servers: { [name]: { type: 'http', url, headers: { Authorization: `Bearer \${input:${name}-key}` } } },
      }),
    },
    {
      id: 'curl',
      client: 'curl',
      where: call ? `Any shell: call ${call.name}` : 'Any shell: list the tools',
      code: `curl -s -X POST ${url} \\\n  -H "Authorization: ${auth}" \\\n  -H "Content-Type: application/json" \\\n  -d '${
        call ? JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: call }) : '{"jsonrpc":"2.0","id":1,"method":"tools/list"}'
      }'`,
    },
  ];
}
