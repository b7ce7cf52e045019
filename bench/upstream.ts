// The fake upstream of the benchmark, on loopback: GET /v1/pages/<id> answers a Notion page object with that
// id (what both Notion MCP servers fetch for a "retrieve page" call), anything else a small JSON body. The
// bench reads a different page in every call; POST /__served with a JSON array of page ids answers how many
// of them were never read here, so the bench can check that every answered call really reached the upstream.
import http from 'node:http';
import { BENCH_PAGE } from './processes.ts';

const small = JSON.stringify({ ok: true });
const served = new Set<string>();

/** A page of a task data source, as Notion-Version 2025-09-03 returns it (ids and times fixed). */
function page(id: string): string {
  const text = (content: string) => ({
    type: 'text',
    text: { content, link: null },
    annotations: { bold: false, italic: false, strikethrough: false, underline: false, code: false, color: 'default' },
    plain_text: content,
    href: null,
  });
  return JSON.stringify({
    object: 'page',
    id,
    created_time: '2026-11-02T09:15:00.000Z',
    last_edited_time: '2026-11-20T16:42:00.000Z',
    created_by: { object: 'user', id: '6c1b3f2e-6a3d-4e0b-9a8c-2f7e1d5c4b3a' },
    last_edited_by: { object: 'user', id: '6c1b3f2e-6a3d-4e0b-9a8c-2f7e1d5c4b3a' },
    cover: null,
    icon: { type: 'emoji', emoji: '📝' },
    parent: { type: 'data_source_id', data_source_id: '1f2e3d4c-5b6a-4798-8a9b-0c1d2e3f4a5b', database_id: '2a3b4c5d-6e7f-4081-9a2b-3c4d5e6f7a8b' },
    archived: false,
    in_trash: false,
    is_locked: false,
    properties: {
      Name: { id: 'title', type: 'title', title: [text(BENCH_PAGE.title)] },
      Status: { id: '%3AUJq', type: 'status', status: { id: 'in-progress', name: 'In progress', color: 'blue' } },
      Due: { id: 'f%5B%5C', type: 'date', date: { start: '2026-12-01', end: null, time_zone: null } },
      Owner: { id: 'Ab%3Cd', type: 'people', people: [{ object: 'user', id: '6c1b3f2e-6a3d-4e0b-9a8c-2f7e1d5c4b3a' }] },
      Tags: {
        id: 'Xy%7Bz',
        type: 'multi_select',
        multi_select: [
          { id: 't1', name: 'planning', color: 'green' },
          { id: 't2', name: 'q1', color: 'gray' },
        ],
      },
      Notes: { id: 'n0te', type: 'rich_text', rich_text: [text('Collect the estimates from each team before the review.')] },
    },
    url: `https://www.notion.so/Quarterly-roadmap-review-${id.replace(/-/g, '')}`,
    public_url: null,
    request_id: '0e7c9b1a-3f2d-4c5b-8a6e-9d0f1a2b3c4d',
  });
}

const server = http.createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    const m = req.method === 'GET' ? /^\/v1\/pages\/([0-9a-f-]{32,36})$/.exec(req.url ?? '') : null;
    if (m) served.add(m[1]);
    let body = small;
    if (m) body = page(m[1]);
    else if (req.url === '/__served')
      body = JSON.stringify({ missing: (JSON.parse(Buffer.concat(chunks).toString()) as string[]).filter((id) => !served.has(id)).length });
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
    res.end(body);
  });
});
server.keepAliveTimeout = 65_000;
server.listen(0, '127.0.0.1', () => {
  const { port } = server.address() as import('node:net').AddressInfo;
  console.log(JSON.stringify({ url: `http://127.0.0.1:${port}` }));
});
