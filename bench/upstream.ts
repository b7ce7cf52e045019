// The fake upstream of the benchmark: answers every request with a small JSON body, on loopback.
import http from 'node:http';

const body = JSON.stringify({ ok: true });
const server = http.createServer((req, res) => {
  req.resume();
  req.on('end', () => {
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
    res.end(body);
  });
});
server.keepAliveTimeout = 65_000;
server.listen(0, '127.0.0.1', () => {
  const { port } = server.address() as import('node:net').AddressInfo;
  console.log(JSON.stringify({ url: `http://127.0.0.1:${port}` }));
});
