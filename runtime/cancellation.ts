// How a call is stopped when its client goes away or cancels it. Not an AbortController: on Node 20 making
// an AbortSignal costs ~20 µs of CPU (V8 gives an EventTarget another prototype), most calls are never
// cancelled, and the upstream client stops a request without one (got's cancel()). A signal is made only
// for what asks for one: a plugin's context, a token refresh.

export class Cancellation {
  private listeners: Array<() => void> | undefined;
  private controller: AbortController | undefined;
  private stopped = false;

  get aborted(): boolean {
    return this.stopped;
  }

  abort(): void {
    if (this.stopped) return;
    this.stopped = true;
    this.controller?.abort();
    const listeners = this.listeners ?? [];
    this.listeners = undefined;
    for (const listener of listeners) listener();
  }

  /** Runs `listener` once when the call is cancelled (at once if it already was); the function returned forgets it. */
  onAbort(listener: () => void): () => void {
    if (this.stopped) {
      listener();
      return () => undefined;
    }
    (this.listeners ??= []).push(listener);
    return () => {
      const at = this.listeners?.indexOf(listener) ?? -1;
      if (at >= 0) this.listeners!.splice(at, 1);
    };
  }

  /** An AbortSignal that follows this cancellation, for APIs that take one; made on first use. */
  get signal(): AbortSignal {
    if (!this.controller) {
      this.controller = new AbortController();
      if (this.stopped) this.controller.abort();
    }
    return this.controller.signal;
  }
}
