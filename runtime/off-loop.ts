// Work that can take long (converting an owner's markdown into a provider's document format) runs here, in
// worker threads, off the event loop every owner's requests share: one owner's large or contrived input then
// delays its own calls, never another owner's tools/list. Jobs wait in one queue per owner and the workers
// take the owners in turn, so an owner with many jobs waiting delays another's by one job at most; a job that
// runs longer than the time limit is stopped (its worker replaced) and fails as the caller's input.
//
// A job names an exported function of a module (a plugin's pure functions) and its argument; both the
// argument and the result cross by structured clone. A ToolError thrown there arrives here as a ToolError.
import { Worker } from 'node:worker_threads';
import { ToolError } from './tool-error.ts';

export interface OffLoopJob {
  /** The module (file URL) exporting the function. */
  module: URL;
  /** The exported function's name; it takes `arg` and returns (or resolves to) a cloneable value. */
  name: string;
  arg: unknown;
}

export interface OffLoopOptions {
  /** Worker threads (each one job at a time). */
  workers: number;
  /** A job running longer is stopped and fails. */
  timeoutMs: number;
}

/** What the worker sends back for a job. */
type Answer =
  { id: number; result: unknown } | { id: number; error: { message: string; tool?: ConstructorParameters<typeof ToolError>[2] & { code: string } } };

interface Pending extends OffLoopJob {
  id: number;
  lane: string;
  resolve(value: unknown): void;
  reject(err: unknown): void;
}

interface Thread {
  worker: Worker;
  /** The job it runs, if any. */
  job?: Pending;
  timer?: NodeJS.Timeout;
}

/** The worker's first module: makes TypeScript importable there (as tsx does for the service), then runs the job loop. */
function bootstrap(): URL {
  const tsx = import.meta.resolve('tsx/esm/api');
  const loop = new URL('./off-loop-thread.ts', import.meta.url).href;
  const code = `import { register } from ${JSON.stringify(tsx)}; register(); await import(${JSON.stringify(loop)});`;
  return new URL(`data:text/javascript,${encodeURIComponent(code)}`);
}

export class OffLoop {
  private readonly threads: Thread[] = [];
  /** Jobs waiting, one queue per lane (owner). */
  private readonly queues = new Map<string, Pending[]>();
  /** When each lane with jobs waiting or running was last served: the least recently served goes next. */
  private readonly served = new Map<string, number>();
  private turns = 0;
  private nextId = 0;
  private closed = false;

  constructor(private readonly options: OffLoopOptions) {}

  /** Runs the job in a worker thread, after the jobs already waiting in its lane and in turn with the other lanes. */
  run<T>(lane: string, job: OffLoopJob): Promise<T> {
    if (this.closed) return Promise.reject(new ToolError('unavailable', 'The service is shutting down', { retryable: true }));
    return new Promise<T>((resolve, reject) => {
      const pending: Pending = { ...job, id: ++this.nextId, lane, resolve: resolve as (v: unknown) => void, reject };
      const queue = this.queues.get(lane);
      if (queue) queue.push(pending);
      else this.queues.set(lane, [pending]);
      this.dispatch();
    });
  }

  /** Stops every worker; jobs still waiting fail. */
  async close(): Promise<void> {
    this.closed = true;
    for (const queue of this.queues.values())
      for (const job of queue) job.reject(new ToolError('unavailable', 'The service is shutting down', { retryable: true }));
    this.queues.clear();
    await Promise.all(this.threads.splice(0).map((t) => this.stop(t)));
  }

  /** Hands waiting jobs to idle workers, the lanes in turn: the one served least recently first. */
  private dispatch(): void {
    while (this.queues.size) {
      const thread = this.idleThread();
      if (!thread) return;
      let lane = '';
      let turn = Infinity;
      for (const waiting of this.queues.keys()) {
        const last = this.served.get(waiting) ?? 0;
        if (last < turn) [lane, turn] = [waiting, last];
      }
      const queue = this.queues.get(lane)!;
      const job = queue.shift()!;
      if (!queue.length) this.queues.delete(lane);
      this.served.set(lane, ++this.turns);
      this.start(thread, job);
    }
  }

  private idleThread(): Thread | undefined {
    const idle = this.threads.find((t) => !t.job);
    if (idle || this.threads.length >= this.options.workers) return idle;
    // Not the service's own flags (--import of loaders and preloads): the thread registers what it needs itself.
    const thread: Thread = { worker: new Worker(bootstrap(), { execArgv: [] }) };
    thread.worker.unref();
    thread.worker.on('message', (answer: Answer) => this.answered(thread, answer));
    thread.worker.on('error', (err) => this.failed(thread, err));
    thread.worker.on('exit', () => this.failed(thread, new Error('the worker thread stopped')));
    this.threads.push(thread);
    return thread;
  }

  private start(thread: Thread, job: Pending): void {
    thread.job = job;
    thread.timer = setTimeout(() => {
      const seconds = this.options.timeoutMs / 1000;
      this.failed(
        thread,
        new ToolError('invalid_arguments', `The input took longer than ${seconds} s to convert; make it shorter or simpler`, { refund: true }),
      );
    }, this.options.timeoutMs);
    thread.worker.postMessage({ id: job.id, module: job.module.href, name: job.name, arg: job.arg });
  }

  private answered(thread: Thread, answer: Answer): void {
    const job = thread.job;
    if (!job || job.id !== answer.id) return;
    this.finish(thread);
    if ('result' in answer) job.resolve(answer.result);
    else job.reject(answer.error.tool ? new ToolError(answer.error.tool.code, answer.error.message, answer.error.tool) : new Error(answer.error.message));
    this.dispatch();
  }

  /** A worker that failed, stopped or ran out of time: its job fails, the worker is replaced by the next job that needs one. */
  private failed(thread: Thread, err: unknown): void {
    const index = this.threads.indexOf(thread);
    if (index < 0) return;
    this.threads.splice(index, 1);
    const job = thread.job;
    this.finish(thread);
    void this.stop(thread);
    job?.reject(err);
    if (!this.closed) this.dispatch();
  }

  private finish(thread: Thread): void {
    clearTimeout(thread.timer);
    const lane = thread.job?.lane;
    thread.job = undefined;
    // A lane with nothing waiting or running is forgotten (the map holds only the owners being served).
    if (lane !== undefined && !this.queues.has(lane) && !this.threads.some((t) => t.job?.lane === lane)) this.served.delete(lane);
  }

  private async stop(thread: Thread): Promise<void> {
    thread.worker.removeAllListeners();
    // An error event after the listeners are gone would crash the process.
    thread.worker.on('error', () => undefined);
    await thread.worker.terminate();
  }
}
