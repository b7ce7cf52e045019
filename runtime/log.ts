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

export function createLogger(level: string, destination?: DestinationStream): Logger {
  return pino({ level, redact: { paths: REDACT, censor: '[redacted]' }, base: { service: 'tool-server' } }, destination);
}
