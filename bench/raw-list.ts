// The floor under the floor of the Notion list rows: node's http server and nothing else. Every POST is answered
// as a tools/list with BENCH_NOTION_LIST (the `result` of ours's Notion tools/list), encoded once, behind its id:
// no framework, no work, three writes. What the machine itself allows a server of this list, with the load
// generator and the server sharing its cores.
import http from 'node:http';
import { answerSignals } from './signals.ts';

const list = process.env.BENCH_NOTION_LIST;
if (!list) throw new Error('raw-list.ts needs BENCH_NOTION_LIST, the result of a Notion tools/list');
const result = Buffer.from(list);
const end = Buffer.from('}');

const server = http.createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    const { id } = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { id: number };
    const start = Buffer.from(`{"jsonrpc":"2.0","id":${id},"result":`);
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': start.length + result.length + end.length });
    res.write(start);
    res.write(result);
    res.end(end);
  });
});
server.listen(0, '127.0.0.1', () => {
  const { port } = server.address() as import('node:net').AddressInfo;
  console.log(JSON.stringify({ url: `http://127.0.0.1:${port}/mcp` }));
});
answerSignals();
