// The time the OAuth sandboxes live by. Codes, access tokens and refresh tokens expire on it, so a test reaches
// "90 days without use" or "10 minutes after rotation" by moving it, never by waiting.

export const SECOND = 1000;
export const MINUTE = 60 * SECOND;
export const HOUR = 60 * MINUTE;
export const DAY = 24 * HOUR;

/**
 * Wall time plus an offset that `advance` and `set` move; `new SandboxClock(start)` is frozen at `start` instead
 * (it then moves only when told). Give one clock to several sandboxes to move them together.
 */
export class SandboxClock {
  private offset = 0;
  private frozenAt: number | undefined;

  constructor(start?: number) {
    this.frozenAt = start;
  }

  /** Milliseconds since the epoch, as the sandbox sees them. */
  now(): number {
    return this.frozenAt ?? Date.now() + this.offset;
  }

  /** Moves the clock forward (or back, with a negative value). */
  advance(ms: number): void {
    if (this.frozenAt === undefined) this.offset += ms;
    else this.frozenAt += ms;
  }

  /** Puts the clock at an instant; a running clock keeps running from there. */
  set(at: number): void {
    if (this.frozenAt === undefined) this.offset = at - Date.now();
    else this.frozenAt = at;
  }
}
