// A call's cancellation (runtime/cancellation.ts): listeners run once, an AbortSignal follows it whenever it is made.
import { describe, expect, it } from 'vitest';
import { Cancellation } from '../runtime/cancellation.ts';

describe('Cancellation', () => {
  it('runs each listener once on abort, and not one that was forgotten', () => {
    const cancellation = new Cancellation();
    const heard: string[] = [];
    cancellation.onAbort(() => heard.push('a'));
    const forget = cancellation.onAbort(() => heard.push('b'));
    forget();
    expect(cancellation.aborted).toBe(false);
    cancellation.abort();
    cancellation.abort();
    expect(cancellation.aborted).toBe(true);
    expect(heard).toEqual(['a']);
  });

  it('runs a listener added after the abort at once', () => {
    const cancellation = new Cancellation();
    cancellation.abort();
    let heard = 0;
    const forget = cancellation.onAbort(() => (heard += 1));
    expect(heard).toBe(1);
    forget();
  });

  it('gives a signal that follows it, made before or after the abort', () => {
    const early = new Cancellation();
    const signal = early.signal;
    let events = 0;
    signal.addEventListener('abort', () => (events += 1));
    expect(signal.aborted).toBe(false);
    early.abort();
    expect(signal.aborted).toBe(true);
    expect(events).toBe(1);
    expect(early.signal).toBe(signal);

    const late = new Cancellation();
    late.abort();
    expect(late.signal.aborted).toBe(true);
    expect(() => late.signal.throwIfAborted()).toThrow(expect.objectContaining({ name: 'AbortError' }));
  });
});
