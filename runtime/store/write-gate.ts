// Whether a store takes writes: both adapters check it before every write. Closed by the store itself (the
// embedded store after a failed append) or by the service (Store.refuseWrites), each refusal under its own
// source; open again once every source has allowed writes.
import { type StoreStatus, StoreUnavailableError } from './port.ts';

interface Refusal {
  reason: string;
  retryAfterSeconds: number;
}

export class WriteGate {
  private readonly refusals = new Map<string, Refusal>();

  refuse(source: string, reason: string, retryAfterSeconds: number): void {
    this.refusals.set(source, { reason, retryAfterSeconds });
  }

  allow(source: string): void {
    this.refusals.delete(source);
  }

  refusedBy(source: string): boolean {
    return this.refusals.has(source);
  }

  /** Throws StoreUnavailableError while any source refuses writes. */
  check(): void {
    const refusal = this.first();
    if (refusal) throw new StoreUnavailableError(refusal.reason, refusal.retryAfterSeconds);
  }

  status(): StoreStatus {
    const refusal = this.first();
    return refusal ? { ok: false, ...refusal } : { ok: true };
  }

  private first(): Refusal | undefined {
    for (const refusal of this.refusals.values()) return refusal;
    return undefined;
  }
}
