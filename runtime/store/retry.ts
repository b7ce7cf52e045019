// Idempotent store writes run again after a transient failure: a lost connection, a failover (the driver
// retries single-document writes itself, once; updateMany and deleteMany it never retries). A store that
// refuses writes or did not answer within its deadline is not asked again here: the request answers 503.
import { StoreUnavailableError } from './port.ts';

export function isTransientStoreError(error: unknown): boolean {
  return error instanceof StoreUnavailableError && error.transient;
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
