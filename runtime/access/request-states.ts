// The `requestState` of a call that needs the client's input first (MCP 2026-07-28, multi round trip): it
// decides nothing by itself, but a retry that carries one is accepted only with the state this service gave to
// that very caller for that very call. HMAC-SHA-256 over a random nonce, the expiry and a digest of what it is
// bound to (never the binding itself: no ids or arguments leave in it); each nonce is spent once, in the store,
// so a replay is refused on every instance. Its expiry is in the store's time, as every lifetime.
import { createHmac } from 'node:crypto';
import type { StoreClock } from '../store/clock.ts';
import type { Collection, Doc, Store } from '../store/port.ts';
import { DuplicateKeyError } from '../store/port.ts';
import { randomToken, sameSecret, sha256 } from '../secrets.ts';

/** A request state works this long: the time to connect an account at a provider and come back. */
export const REQUEST_STATE_MINUTES = 15;

interface SpentStateDoc extends Doc {
  /** _id is the nonce. */
  expires_at: Date;
}

export class RequestStates {
  private readonly spent: Collection<SpentStateDoc>;
  private readonly clock: StoreClock;

  constructor(
    store: Store,
    private readonly secret: Buffer,
  ) {
    this.spent = store.collection<SpentStateDoc>('spent_request_states');
    this.clock = store.clock;
  }

  /** A new state bound to `binding` (the caller, the method, the params' digest). */
  seal(binding: string): string {
    const now = this.clock.now();
    const body = Buffer.from(JSON.stringify({ n: randomToken('', 16), x: now + REQUEST_STATE_MINUTES * 60_000, b: sha256(binding) })).toString('base64url');
    return `${body}.${this.sign(body)}`;
  }

  /** Null when `state` is this service's, for `binding`, in time and not used before (it is spent now); else the problem. */
  async open(binding: string, state: unknown): Promise<string | null> {
    if (typeof state !== 'string' || state.length > 1000) return 'is not a state this server gave';
    const [body, mac, extra] = state.split('.');
    if (!body || !mac || extra !== undefined || !sameSecret(mac, this.sign(body))) return 'is not a state this server gave (it was changed, or made elsewhere)';
    let claims: { n: string; x: number; b: string };
    try {
      claims = JSON.parse(Buffer.from(body, 'base64url').toString('utf8')) as typeof claims;
    } catch {
      return 'is not a state this server gave';
    }
    if (claims.b !== sha256(binding)) return 'was given for another caller or another call (its method and arguments must be the same)';
    if (claims.x <= this.clock.now()) return `has expired (a state works for ${REQUEST_STATE_MINUTES} minutes): call the tool again without it`;
    try {
      await this.spent.insertOne({ _id: claims.n, expires_at: new Date(claims.x) });
    } catch (err) {
      if (err instanceof DuplicateKeyError) return 'was used already (each state is good for one retry)';
      throw err;
    }
    return null;
  }

  /** Forgets spent states past their expiry (they are refused as expired anyway). */
  sweep(now = this.clock.date()): Promise<number> {
    return this.spent.deleteMany({ expires_at: { $lt: now } });
  }

  private sign(body: string): string {
    return createHmac('sha256', this.secret).update(`request state\0${body}`).digest('base64url');
  }
}
