// A loopback TCP relay between the service and the MongoDB-wire server that can lose the answer of one chosen
// command: the command reaches the server and is applied, then its connection drops before the answer comes
// back, as when a network link or a primary fails at that moment. The client sees a network error.
import net from 'node:net';
import { BSON } from 'mongodb';

const OP_MSG = 2013;

export type Command = Record<string, unknown>;

export interface WireProxy {
  /** The target URL with this relay's address in place of the server's. */
  url: string;
  /** The next command matching `match` is applied, its answer lost; resolves with that command once it happened. */
  loseAnswerOf(match: (command: Command) => boolean): Promise<Command>;
  close(): Promise<void>;
}

export async function startWireProxy(targetUrl: string): Promise<WireProxy> {
  const target = /^mongodb:\/\/([^/:?#]+):(\d+)/.exec(targetUrl);
  if (!target) throw new Error(`the relay needs a mongodb://host:port URL (got ${targetUrl})`);
  const traps: Array<{ match: (command: Command) => boolean; sprung: (command: Command) => void }> = [];
  const sockets = new Set<net.Socket>();

  const server = net.createServer((client) => {
    const upstream = net.connect(Number(target[2]), target[1]);
    sockets.add(client).add(upstream);
    let dropNextAnswer: (() => void) | undefined;
    const end = () => {
      client.destroy();
      upstream.destroy();
    };
    client.on('close', end).on('error', end);
    upstream.on('close', end).on('error', end);
    frames(client, (message) => {
      const command = commandOf(message);
      const trap = command && traps.find((t) => t.match(command));
      if (trap) {
        traps.splice(traps.indexOf(trap), 1);
        dropNextAnswer = () => trap.sprung(command!);
      }
      upstream.write(message);
    });
    frames(upstream, (message) => {
      if (!dropNextAnswer) return void client.write(message);
      dropNextAnswer();
      end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;

  return {
    url: targetUrl.replace(/^mongodb:\/\/[^/?#]+/, `mongodb://127.0.0.1:${port}`),
    loseAnswerOf: (match) => new Promise((sprung) => traps.push({ match, sprung })),
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** Calls `onMessage` with each whole wire message (little-endian int32 length first) read from the socket. */
function frames(socket: net.Socket, onMessage: (message: Buffer) => void): void {
  let pending = Buffer.alloc(0);
  socket.on('data', (chunk: Buffer) => {
    pending = Buffer.concat([pending, chunk]);
    while (pending.length >= 4 && pending.length >= pending.readInt32LE(0)) {
      const size = pending.readInt32LE(0);
      onMessage(pending.subarray(0, size));
      pending = pending.subarray(size);
    }
  });
}

/** An OP_MSG's command document, its document sequences (kind 1 sections) added under their names. */
function commandOf(message: Buffer): Command | undefined {
  if (message.readInt32LE(12) !== OP_MSG) return undefined;
  let command: Command | undefined;
  const sequences: Record<string, unknown[]> = {};
  for (let pos = 20; pos + 5 <= message.length;) {
    const kind = message[pos]!;
    const size = message.readInt32LE(pos + 1);
    if (kind === 0) command = BSON.deserialize(message.subarray(pos + 1, pos + 1 + size));
    else {
      const body = message.subarray(pos + 5, pos + 1 + size);
      const nameEnd = body.indexOf(0);
      const docs: unknown[] = [];
      for (let at = nameEnd + 1; at < body.length; at += body.readInt32LE(at)) docs.push(BSON.deserialize(body.subarray(at, at + body.readInt32LE(at))));
      sequences[body.subarray(0, nameEnd).toString()] = docs;
    }
    pos += 1 + size;
  }
  return command && { ...command, ...sequences };
}
