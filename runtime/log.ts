// Structured logs (pino). Authorization headers and every secret-looking field are redacted; log lines
// name key ids, never key values, and never carry tool arguments.
import { pino, type DestinationStream, type Logger } from 'pino';

export type { Logger };

const REDACT = [
  'authorization',
  '*.authorization',
  'req.headers.authorization',
  'req.headers.cookie',
  'headers.authorization',
  'headers["x-n8n-api-key"]',
  'headers.apikey',
  '*.api_key',
  '*.api_token',
  '*.integration_token',
  '*.key',
  '*.token',
  '*.password',
  '*.secret',
];

export interface Loggers {
  logger: Logger;
  /**
   * The access log: one line per request, whose fields are all chosen in service.ts (ids, method, path,
   * status, time) and none of them secret. It skips the redaction pass, which costs more than the rest of
   * writing a line and would find nothing there.
   */
  accessLog: Logger;
}

/**
 * Log lines are written in batches of whole lines of at most PIPE_BUF bytes (so that the writes of several
 * processes to one pipe never mix within a line), once half that waits or FLUSH_EVERY_MS after a line was logged.
 */
const PIPE_BUF = 4096;
const FLUSH_EVERY_MS = 100;

/**
 * Where the service writes its log (a file descriptor or a path): lines are gathered and written in batches, a
 * write per line costing a busy service more than the rest of logging. A line waits at most FLUSH_EVERY_MS; what
 * waits is written at exit (pino's own handler), and lost only with a kill -9.
 */
export function logFile(dest: number | string): DestinationStream {
  const file = pino.destination({ dest, minLength: PIPE_BUF / 2, maxWrite: PIPE_BUF });
  let waiting = false;
  setInterval(() => {
    if (!waiting) return;
    waiting = false;
    file.flush(() => undefined);
  }, FLUSH_EVERY_MS).unref();
  return {
    write(line: string) {
      waiting = true;
      file.write(line);
    },
  };
}

export function createLoggers(level: string, destination: DestinationStream = logFile(1)): Loggers {
  const base = { service: 'tool-server' };
  return {
    logger: pino({ level, redact: { paths: REDACT, censor: '[redacted]' }, base }, destination),
    accessLog: pino({ level, base }, destination),
  };
}
