// What a bench server does on SIGUSR2, for the runner that drives it: with BENCH_PROFILE=<file>, the first
// signal starts V8's CPU profiler and the second writes the profile there (so start-up and warm-up stay out
// of it); under --expose-gc, each signal collects garbage (the soak compares live memory).
import { writeFileSync } from 'node:fs';
import { Session } from 'node:inspector';

export function answerSignals(): void {
  const profileFile = process.env.BENCH_PROFILE;
  const gc = (globalThis as { gc?: () => void }).gc;
  if (profileFile) {
    const session = new Session();
    session.connect();
    let running = false;
    process.on('SIGUSR2', () => {
      if (!running) {
        running = true;
        session.post('Profiler.enable', () => session.post('Profiler.setSamplingInterval', { interval: 100 }, () => session.post('Profiler.start')));
        return;
      }
      session.post('Profiler.stop', (err, res) => {
        writeFileSync(profileFile, JSON.stringify(err ? { error: String(err) } : res.profile));
        console.error(`profile written to ${profileFile}`);
      });
    });
  } else if (gc) process.on('SIGUSR2', () => gc());
}
