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

export function createLoggers(level: string, destination: DestinationStream = pino.destination(1)): Loggers {
  const base = { service: 'tool-server' };
  return {
    logger: pino({ level, redact: { paths: REDACT, censor: '[redacted]' }, base }, destination),
    accessLog: pino({ level, base }, destination),
  };
}
