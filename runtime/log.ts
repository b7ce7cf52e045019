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

/** Where the logs go: a file descriptor or a path (stdout by default), or one stream that both logs write to (tests read it). */
export type LogDestination = number | string | DestinationStream;

/**
 * Access lines are written once 3 KB of them are waiting, or at the latest 250 ms after they were logged, as a web
 * server buffers its access log: a write per line cost ~50 µs of CPU per request at one request at a time (a
 * write handed to libuv's thread pool, then its completion). A write holds whole lines, at most PIPE_BUF (4 KB),
 * so that a pipe takes it in one piece between the other log's lines. At exit the rest is written; a SIGKILL
 * loses at most the last 250 ms. Everything else (warnings, errors, events) is written as soon as it is logged.
 */
const ACCESS_LOG = { minLength: 3072, maxWrite: 4096, periodicFlush: 250 };

export function createLoggers(level: string, destination: LogDestination = 1): Loggers {
  const base = { service: 'tool-server' };
  const [events, access] =
    typeof destination === 'object' ? [destination, destination] : [pino.destination(destination), pino.destination({ dest: destination, ...ACCESS_LOG })];
  return {
    logger: pino({ level, redact: { paths: REDACT, censor: '[redacted]' }, base }, events),
    accessLog: pino({ level, base }, access),
  };
}
