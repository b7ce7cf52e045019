// What a bench server does on signals from the runner that drives it. SIGUSR2: with BENCH_PROFILE=<file>, the first
// signal starts V8's CPU profiler and the second writes the profile there (so start-up and warm-up stay out
// of it); with BENCH_HEAP_PROFILE=<file> as well, V8's sampling heap profiler runs alongside and keeps every
// allocation it sampled, collected or not (what makes the garbage); under --expose-gc, each signal collects
// garbage (the soak compares live memory).
import { rmSync, writeFileSync } from 'node:fs';
import { Session } from 'node:inspector';

export function answerSignals(): void {
  const profileFile = process.env.BENCH_PROFILE;
  const gc = (globalThis as { gc?: () => void }).gc;
  const heapFile = process.env.BENCH_HEAP_PROFILE;
  if (profileFile) {
    const session = new Session();
    session.connect();
    let running = false;
    process.on('SIGUSR2', () => {
      if (!running) {
        running = true;
        session.post('Profiler.enable', () => session.post('Profiler.setSamplingInterval', { interval: 100 }, () => session.post('Profiler.start')));
        if (heapFile) {
          const all = { includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: true };
          session.post('HeapProfiler.enable', () => session.post('HeapProfiler.startSampling', Object.assign({ samplingInterval: 4096 }, all) as never));
        }
        return;
      }
      if (heapFile) {
        session.post('HeapProfiler.stopSampling', (err, res) => {
          writeFileSync(heapFile, JSON.stringify(err ? { error: String(err) } : res.profile));
          console.error(`heap profile written to ${heapFile}`);
        });
      }
      session.post('Profiler.stop', (err, res) => {
        writeFileSync(profileFile, JSON.stringify(err ? { error: String(err) } : res.profile));
        console.error(`profile written to ${profileFile}`);
      });
    });
  } else if (gc) process.on('SIGUSR2', () => gc());
}

/** Removes a server's scratch folder when the runner stops it (SIGTERM, or SIGINT from a terminal). */
export function removeOnStop(dir: string): void {
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => {
      rmSync(dir, { recursive: true, force: true });
      process.exit(0);
    });
  }
}
