// A loopback TCP relay in front of a server (the SMTP peer) whose behaviour a test switches: `up` relays both
// ways, `down` drops each connection as it comes (a server that is gone), `hang` accepts and never says a word
// (a server that is stuck). What a service does when its mail server fails, without touching the server.
import net from 'node:net';

export type RelayMode = 'up' | 'down' | 'hang';

export interface TcpRelay {
  port: number;
  /** Connections accepted so far. */
  accepted(): number;
  set(mode: RelayMode): void;
  close(): Promise<void>;
}

export async function startTcpRelay(target: { host: string; port: number }, mode: RelayMode = 'up'): Promise<TcpRelay> {
  const sockets = new Set<net.Socket>();
  let accepted = 0;
  const server = net.createServer((client) => {
    accepted++;
    sockets.add(client);
    client.on('close', () => sockets.delete(client)).on('error', () => client.destroy());
    if (mode === 'down') return void client.destroy();
    if (mode === 'hang') return;
    const upstream = net.connect(target.port, target.host);
    sockets.add(upstream);
    const end = () => {
      client.destroy();
      upstream.destroy();
    };
    upstream.on('close', end).on('error', end);
    client.on('close', end);
    client.pipe(upstream).pipe(client);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as net.AddressInfo).port,
    accepted: () => accepted,
    set(next) {
      mode = next;
      // Connections held by a hang end with it; new ones follow the new mode.
      if (next !== 'hang') for (const s of sockets) s.destroy();
    },
    async close() {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
