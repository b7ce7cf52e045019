// The job loop of an OffLoop worker thread (runtime/off-loop.ts): imports the job's module (once), calls the
// named export with the argument and answers with the result, or with the error (a ToolError's code, refund
// and retry flags travel along, so it arrives as a ToolError).
import { parentPort } from 'node:worker_threads';

interface Job {
  id: number;
  module: string;
  name: string;
  arg: unknown;
}

const port = parentPort!;

port.on('message', async (job: Job) => {
  try {
    const exports = (await import(job.module)) as Record<string, unknown>;
    const fn = exports[job.name];
    if (typeof fn !== 'function') throw new Error(`${job.module} exports no function ${job.name}`);
    port.postMessage({ id: job.id, result: await (fn as (arg: unknown) => unknown)(job.arg) });
  } catch (err) {
    const e = err as { message?: string; code?: unknown; refund?: unknown; retryable?: unknown; providerStatus?: unknown };
    const tool =
      typeof e.code === 'string' && typeof e.refund === 'boolean'
        ? { code: e.code, refund: e.refund, retryable: e.retryable === true, providerStatus: typeof e.providerStatus === 'number' ? e.providerStatus : null }
        : undefined;
    port.postMessage({ id: job.id, error: { message: String(e?.message ?? err), tool } });
  }
});
