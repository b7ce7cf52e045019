// Reads a request body as text with a hard size limit (checked on Content-Length and while streaming).
// A body that already arrived whole is taken from the stream's buffer; one still arriving is read with the
// stream's events, not `for await` (an async iterator over the request costs a call more than the rest).
import type { IncomingMessage } from 'node:http';

export class BodyTooLargeError extends Error {}

/** The body as text: at once (no promise) when all of it was already received, as a small request's is by then. */
export function readBody(req: IncomingMessage, limit: number): string | Promise<string> {
  const declared = Number(req.headers['content-length']);
  if (Number.isFinite(declared) && declared > limit) {
    req.resume();
    return Promise.reject(new BodyTooLargeError());
  }
  if (req.complete && !req.readableFlowing) {
    // Everything the parser pushed is still buffered: one read takes all of it, and the stream then ends.
    const all = req.read() as Buffer | null;
    if (all && all.length > limit) return Promise.reject(new BodyTooLargeError());
    return all ? all.toString('utf8') : '';
  }
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size <= limit) return void chunks.push(chunk);
      done();
      req.resume();
      reject(new BodyTooLargeError());
    };
    const onEnd = () => {
      done();
      resolve(chunks.length === 1 ? chunks[0].toString('utf8') : Buffer.concat(chunks).toString('utf8'));
    };
    const onError = (err: Error) => {
      done();
      reject(err);
    };
    // A request whose client went away before the end: what `for await` answered with.
    const onClose = () => {
      if (req.complete) return;
      done();
      reject(Object.assign(new Error('aborted'), { code: 'ECONNRESET' }));
    };
    const done = () => {
      req.off('data', onData).off('end', onEnd).off('error', onError).off('close', onClose);
    };
    req.on('data', onData).on('end', onEnd).on('error', onError).on('close', onClose);
  });
}
