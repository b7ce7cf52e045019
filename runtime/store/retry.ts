// Idempotent store writes run again after a transient failure: a lost connection, a failover (the driver
// retries single-document writes itself, once; updateMany and deleteMany it never retries).
import { MongoError, MongoNetworkError, MongoServerSelectionError } from 'mongodb';

/** The driver's own list of errors worth retrying: the server is stepping down, shutting down or unreachable. */
const TRANSIENT_CODES = new Set([6, 7, 89, 91, 189, 262, 9001, 10107, 11600, 11602, 13435, 13436]);

export function isTransientStoreError(error: unknown): boolean {
  if (!(error instanceof MongoError)) return false;
  return (
    error instanceof MongoNetworkError ||
    error instanceof MongoServerSelectionError ||
    error.hasErrorLabel('RetryableWriteError') ||
    (typeof error.code === 'number' && TRANSIENT_CODES.has(error.code))
  );
}

/**
 * Runs `write` until it succeeds, at most `attempts` times, waiting a little longer each time, as long as it
 * fails transiently. Only for writes that are safe to repeat (their filter no longer matches what they did).
 */
export async function retryTransient<R>(write: () => Promise<R>, attempts = 4, firstDelayMs = 100): Promise<R> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await write();
    } catch (error) {
      if (attempt >= attempts || !isTransientStoreError(error)) throw error;
      await new Promise((resolve) => setTimeout(resolve, firstDelayMs * 2 ** (attempt - 1)));
    }
  }
}
