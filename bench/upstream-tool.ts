// The tool both SDK references expose: it asks the benchmark's upstream whether it is there.
export async function pingUpstream(upstream: string) {
  const res = await fetch(`${upstream}/ping`);
  const body = (await res.json()) as Record<string, unknown>;
  return { content: [{ type: 'text' as const, text: JSON.stringify(body) }], structuredContent: body };
}

export const PING_TOOL = { title: 'Ping', description: 'Asks the upstream whether it is there.' };
