// How late this process's event loop ran at worst since a point: on a busy machine an answer is late by that
// much whatever the code under test does, so a bound on a latency allows for it (and only for it).
import { monitorEventLoopDelay } from 'node:perf_hooks';

export function watchLoopLag(): { worstMs(): number; stop(): void } {
  const histogram = monitorEventLoopDelay({ resolution: 10 });
  histogram.enable();
  return {
    worstMs: () => histogram.max / 1e6,
    stop: () => histogram.disable(),
  };
}
