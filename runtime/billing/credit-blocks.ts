// Credit blocks: how a process charges calls without writing the owner's credit line for each one. It takes a
// block of the owner's credits with one update (Credits.exchange) and hands sub-ranges of it to calls from
// memory; each call's record keeps its range, as before. A refunded call gives its credits back to its block,
// in memory. A block stops handing out when it is spent, idle for IDLE_MS or at the end of its lease; once its
// last call has ended, the unused rest is recorded (a record of its range that counts no call) and the rest
// plus the refunds go back to the balance with one update, which rides on the owner's next take when there is
// one. So a busy owner's line is written about once per block, not per call.
//
// Block size follows the owner's rate in this process: about BLOCK_SECONDS of its use, never more than
// 1/FAIR_SHARE of what the balance has left. Where that is less than a call (an owner near zero), a block is
// exactly what the waiting calls cost: today's per-call charge, group-committed; nothing sits idle in a block
// there, and an idle block elsewhere is given back within IDLE_MS plus a tick.
//
// An owner with plenty (what is left after the block is at least ROOMY_SHARE blocks of ROOMY_SECONDS of use) gets
// a roomy block: ROOMY_SECONDS of use, kept through idle moments until it is spent or its lease ends, so that
// calls seconds apart (an agent thinking between them) are charged from memory, not by a take each. Should the
// balance run low meanwhile, a process that cannot fit a call announces that the owner's credits are wanted
// (through the change feed, store/changes.ts) before it waits for blocks to come back; every process gives back
// its idle blocks of that owner within a poll of the feed, IDLE_MS and a tick. Without a feed, no block is roomy.
// A roomy block's successor is taken ahead, off the calls' paths, once a quarter of its credits or half of its
// lease is left: an owner calling steadily, even with pauses of seconds, has its calls served from memory.
//
// Crash safety: the line lists every live block with its lease. A process that dies holding blocks loses
// nothing: once a block's lease and the longest call it could have started are over, settlement records the
// gaps of its range as interrupted and returns the rest (settlement.ts), guarded by the entry like a return.
import { randomBytes } from 'node:crypto';
import type { ChangeFeed } from '../store/changes.ts';
import type { StoreClock } from '../store/clock.ts';
import { type OffPath, offPath } from '../off-path.ts';
import type { BlockReturn, Credits, LineState } from './credits.ts';
import { KeyedGroupCommit } from './group-commit.ts';

/** A call's charge: its range of the owner's line starts at `from`, inside block `block`. */
export interface Charge {
  from: number;
  block: string;
}

/** What the blocks need of the change feed: to announce, and to hear, that an owner's credits are wanted. */
export type WantedFeed = Pick<ChangeFeed, 'announce' | 'follow' | 'pollMs'>;

export interface CreditBlocksOptions {
  /** How long a block hands out sub-ranges (its lease, by the store's clock). */
  leaseMs: number;
  /** The change feed every process of the service reads; without one no block is roomy. */
  feed?: WantedFeed;
  /** Writes the record of a block's unused rest, before the block goes back (the records tile the line). */
  recordRest: (ownerId: string, blockId: string, from: number, credits: number) => Promise<void>;
  onBackgroundError?: (err: unknown) => void;
}

/** A block holds about this many seconds of the owner's use in this process. */
const BLOCK_SECONDS = 1;
/** A block is at most this fraction of what the balance has left (1/8), so idle blocks never hold much of it. */
const FAIR_SHARE = 8;
/** A block without a new call this long is given back (a roomy one only when its owner's credits are wanted). */
export const IDLE_MS = 1000;
/** A roomy block holds about this many seconds of the owner's use in this process. */
const ROOMY_SECONDS = 10;
/** A block is roomy when what the balance has left after it is at least this many such blocks. */
const ROOMY_SHARE = 64;
/** How long after an announcement that an owner's credits are wanted its roomy blocks are given back when idle. */
const WANTED_MS = 10_000;
/** A roomy block's successor is taken once what is left of its credits is below this share of them... */
const AHEAD_CREDITS_SHARE = 1 / 4;
/** ...or what is left of its lease below this share of it (a call within it keeps the owner's blocks going). */
const AHEAD_LEASE_SHARE = 1 / 2;
/** The change feed's name for "this owner's credits are wanted" (its key: the owner). */
const CREDITS_WANTED = 'credits-wanted';
/**
 * An owner with nothing held here is forgotten (its rate with it) this long after its last take: one back from a
 * pause of a minute gets a block sized by its rate at once, not blocks growing from a call's cost again.
 */
const FORGET_MS = 120_000;
/** How often idle blocks are retired and finished ones given back. */
export const TICK_MS = 250;
/** Takes tried when other processes move the line's end in between; then the calls are refused as not fitting. */
const TAKE_ATTEMPTS = 8;

interface Block {
  id: string;
  from: number;
  end: number;
  /** The next position to hand out. */
  next: number;
  /** Store time: nothing is handed out from then on (settlement may return the block once calls are over too). */
  until: number;
  lastUsed: number;
  /** Calls handed a range and not ended yet (their record not written). */
  running: number;
  /** Credits of this block's refunded calls, given back with the block. */
  refunded: number;
  /** Kept through idle moments (see the top of the file). */
  roomy: boolean;
  /** Its successor was asked for ahead (once per block). */
  successorAsked: boolean;
  /** Hands out nothing more: given back once `running` is 0. */
  retired: boolean;
  /** Store time it was retired. */
  retiredAt: number;
  restRecorded: boolean;
}

/** One owner's blocks in this process. */
interface OwnerBlocks {
  live: Block | null;
  blocks: Map<string, Block>;
  use: UseRate;
  /** Store time another process announced it could not fit a call (its idle roomy blocks go back until WANTED_MS after). */
  wantedAt: number;
  /** The live roomy block is running out: the next write takes its successor. */
  ahead: boolean;
  /**
   * The line as this process's last write of it answered: a take that it covers starts from it without reading
   * the line, until another process is seen to have moved the line's end (`shared`: read before every take).
   */
  line: LineState | null;
  shared: boolean;
}

/** A process's use of credits from blocks (an owner's, a budget's): credits per second, smoothed over its takes. */
export class UseRate {
  private handed = 0;
  lastTake = 0;
  private rate = 0;

  used(credits: number): void {
    this.handed += credits;
  }

  /** At a take: folds the use since the last one into the rate. */
  taking(now: number): void {
    const sample = (this.handed * 1000) / Math.max(100, now - this.lastTake);
    this.rate = this.lastTake === 0 ? 0 : (this.rate + sample) / 2;
    this.lastTake = now;
    this.handed = 0;
  }

  /**
   * A block's headroom beyond what the calls waiting need: about BLOCK_SECONDS of this use, within 1/FAIR_SHARE of
   * what is `left` after them; 0 (a per-call charge) when that is less than the largest call.
   */
  headroom(left: number, largestCost: number): number {
    const headroom = Math.floor(Math.min(this.rate * BLOCK_SECONDS, left / FAIR_SHARE));
    return headroom >= largestCost ? headroom : 0;
  }

  /** A roomy block's headroom: ROOMY_SECONDS of this use, where `left` holds ROOMY_SHARE of those; else 0. */
  roomyHeadroom(left: number, largestCost: number): number {
    const headroom = Math.floor(this.rate * ROOMY_SECONDS);
    return headroom >= largestCost && headroom * ROOMY_SHARE <= left ? headroom : 0;
  }
}

export class CreditBlocks {
  private readonly owners = new Map<string, OwnerBlocks>();
  /** One write of an owner's line at a time in this process; a cost of 0 only gives finished blocks back. */
  private readonly writes = new KeyedGroupCommit<number, Charge | null>((ownerId, costs) => this.write(ownerId, costs));
  private timer: NodeJS.Timeout | null = null;
  /** Takes ahead run here, not in the context of the call that found the block running out. */
  private readonly offPath: OffPath = offPath();

  constructor(
    private readonly credits: Credits,
    private readonly clock: StoreClock,
    private readonly options: CreditBlocksOptions,
  ) {
    credits.holding((ownerId) => this.held(ownerId));
    options.feed?.follow(CREDITS_WANTED, {
      delete: (ownerId) => this.wanted(ownerId),
      // A gap in what the feed told: any owner's credits may be wanted.
      clear: () => {
        for (const ownerId of this.owners.keys()) this.wanted(ownerId);
      },
    });
  }

  /** Another process could not fit a call of the owner's: its idle roomy blocks here go back (tick). */
  private wanted(ownerId: string): void {
    const owner = this.owners.get(ownerId);
    if (owner) owner.wantedAt = this.clock.now();
  }

  /** What this process holds for the owner and has not handed to a call: the unused rest of its blocks and their refunds. */
  held(ownerId: string): number {
    let held = 0;
    for (const block of this.owners.get(ownerId)?.blocks.values() ?? []) held += block.end - block.next + block.refunded;
    return held;
  }

  /** Takes `cost` credits: from the live block in memory, else with the owner's next write. Null: the balance does not cover it. */
  charge(ownerId: string, cost: number): Promise<Charge | null> {
    const owner = this.owners.get(ownerId);
    const charge = owner && this.handOut(ownerId, owner, cost);
    if (charge) {
      this.credits.charged(ownerId);
      return Promise.resolve(charge);
    }
    return this.writes.add(ownerId, cost).then((taken) => {
      if (taken) this.credits.charged(ownerId);
      return taken;
    });
  }

  /** A range of the live block, if it has one left for `cost` and its lease is not over. */
  private handOut(ownerId: string, owner: OwnerBlocks, cost: number): Charge | null {
    const block = owner.live;
    const now = this.clock.now();
    if (!block || now >= block.until || block.end - block.next < cost) return null;
    const from = block.next;
    block.next += cost;
    block.running++;
    block.lastUsed = now;
    owner.use.used(cost);
    if (block.roomy && !block.successorAsked && runningOut(block, now, this.options.leaseMs)) {
      block.successorAsked = true;
      owner.ahead = true;
      this.offPath(() => this.writes.add(ownerId, 0)).catch((err: unknown) => this.options.onBackgroundError?.(err));
    }
    return { from, block: block.id };
  }

  /** A call charged from `charge.block` ended and its record is stored: a refund goes back into its block. */
  release(ownerId: string, charge: Charge, cost: number, refund: boolean): void {
    const block = this.owners.get(ownerId)?.blocks.get(charge.block);
    if (!block) return; // given back by settlement meanwhile (it counted this call's record)
    block.running--;
    if (refund) block.refunded += cost;
  }

  /** Gives every block back whose calls are over (at shutdown, or when a test wants the balance as it stands). */
  async flush(): Promise<void> {
    for (const owner of this.owners.values()) if (owner.live) this.retire(owner, owner.live);
    await Promise.all([...this.owners].filter(([, owner]) => finished(owner).length > 0).map(([ownerId]) => this.writes.add(ownerId, 0)));
    await this.writes.idle();
  }

  private retire(owner: OwnerBlocks, block: Block): void {
    block.retired = true;
    block.retiredAt = this.clock.now();
    if (owner.live === block) owner.live = null;
  }

  /**
   * The owner's one write: gives back the blocks whose calls are over and, for the calls waiting (`costs` > 0),
   * takes a block that covers them plus the owner's next second here. When the balance does not cover them all,
   * those that fit in order of arrival get their ranges; the others are refused, after waiting once for blocks to
   * come back (idle ones of other processes, this one's whose calls are ending): an owner near zero is not refused
   * while its credits sit in a block.
   */
  private async write(ownerId: string, costs: number[]): Promise<Array<Charge | null>> {
    const owner = this.ownerOf(ownerId);
    // Calls that queued while the previous write was under way: the block it took serves them first, and they do
    // not wait for returns (the tick makes those).
    const served = costs.map((cost) => (cost > 0 ? this.handOut(ownerId, owner, cost) : null));
    const wanted = costs.flatMap((cost, i) => (cost > 0 && !served[i] ? [i] : []));
    if (served.every(Boolean)) return served;
    const now = this.clock.now();
    // A take ahead keeps the live block handing out until its successor is there (exchange retires it then).
    const ahead = wanted.length === 0 && owner.ahead && owner.live !== null && now - owner.wantedAt >= WANTED_MS;
    owner.ahead = false;
    if (wanted.length > 0 && owner.live) this.retire(owner, owner.live);
    if (wanted.length > 0 || ahead) owner.use.taking(now);
    let starts = (await this.exchange(ownerId, owner, costs, wanted, ahead)).map((s, i) => served[i] ?? s);
    if (starts.some((s, i) => s === null && costs[i] > 0) && (await this.credits.blockIds(ownerId)).length > 0) {
      const feed = this.options.feed;
      if (feed) await feed.announce(CREDITS_WANTED, ownerId).catch((err: unknown) => this.options.onBackgroundError?.(err));
      await new Promise((resolve) => setTimeout(resolve, (feed?.pollMs ?? 0) + IDLE_MS + 2 * TICK_MS));
      const refused = wanted.filter((i) => starts[i] === null);
      const again = await this.exchange(ownerId, owner, costs, refused);
      starts = starts.map((s, i) => s ?? again[i]);
    }
    this.forgetIfEmpty(ownerId, owner);
    return starts;
  }

  /**
   * Gives back what is finished and takes a block for the charges `wanted` (indexes into costs) that fit, or
   * (`ahead`) a roomy block to succeed the live one, if the owner still has plenty.
   */
  private async exchange(ownerId: string, owner: OwnerBlocks, costs: number[], wanted: number[], ahead = false): Promise<Array<Charge | null>> {
    const starts: Array<Charge | null> = costs.map(() => null);
    const coversAll = (state: LineState) => fitting(costs, wanted, state.balance).length === wanted.length;
    const known = !owner.shared && owner.line && coversAll(owner.line) ? owner.line : null;
    let line = wanted.length > 0 || ahead ? (known ?? (await this.credits.line(ownerId))) : null;
    // Calls that the balance covers do not wait for the records of finished blocks' rests: those go back later.
    const covered = line !== null && wanted.length > 0 && coversAll(line);
    let returning = await this.returnsOf(ownerId, owner, covered);
    for (let attempt = 0; attempt < TAKE_ATTEMPTS; attempt++) {
      const back = returning.reduce((sum, r) => sum + r.credits, 0);
      const chosen = line ? fitting(costs, wanted, line.balance + back) : [];
      const need = chosen.reduce((sum, i) => sum + costs[i], 0);
      const now = this.clock.now();
      const left = line ? line.balance + back - need : 0;
      const largest = Math.max(0, ...chosen.map((i) => costs[i]));
      const taking = line !== null && (need > 0 || ahead);
      const roomyHeadroom = taking && this.options.feed ? owner.use.roomyHeadroom(left, largest) : 0;
      const roomy = roomyHeadroom > 0;
      const headroom = roomyHeadroom || (taking && need > 0 ? owner.use.headroom(left, largest) : 0);
      const take = need > 0 || roomy ? { id: `b${randomBytes(8).toString('hex')}`, size: need + headroom, until: new Date(now + this.options.leaseMs) } : null;
      if (!take && returning.length === 0) break;
      const written = await this.credits.exchange(ownerId, line ?? { debited: 0, balance: 0 }, take, returning);
      if (written) {
        owner.line = written;
        for (const r of returning) owner.blocks.delete(r.id);
        if (take && line) {
          const block: Block = {
            id: take.id,
            from: line.debited,
            end: line.debited + take.size,
            next: line.debited,
            until: take.until.getTime(),
            lastUsed: now,
            running: 0,
            refunded: 0,
            roomy,
            successorAsked: false,
            retired: headroom === 0,
            retiredAt: now,
            restRecorded: false,
          };
          for (const i of chosen) {
            starts[i] = { from: block.next, block: block.id };
            block.next += costs[i];
            block.running++;
          }
          owner.use.used(need);
          owner.blocks.set(block.id, block);
          if (!block.retired) {
            if (owner.live) this.retire(owner, owner.live);
            owner.live = block;
          }
        }
        return starts;
      }
      // The line's end moved (another process took a block), or a block was given back elsewhere (settlement,
      // after its lease): read again.
      if (returning.length > 0) {
        const present = await this.credits.present(
          ownerId,
          returning.map((r) => r.id),
        );
        for (const r of returning) if (!present.has(r.id)) owner.blocks.delete(r.id);
        returning = returning.filter((r) => present.has(r.id));
      }
      if (line) {
        const tried = line;
        line = await this.credits.line(ownerId);
        // Another process moved the line's end since this one last wrote it: read the line before every take now.
        if (tried === known && line?.debited !== known.debited) owner.shared = true;
      }
    }
    return starts;
  }

  /**
   * The returns of the owner's finished blocks, each rest recorded first (the records tile the line); only of those
   * with no rest to record when `restless`.
   */
  private async returnsOf(ownerId: string, owner: OwnerBlocks, restless: boolean): Promise<BlockReturn[]> {
    const done = finished(owner).filter((b) => !restless || b.restRecorded || b.next >= b.end);
    await Promise.all(
      done
        .filter((b) => !b.restRecorded && b.next < b.end)
        .map(async (b) => {
          await this.options.recordRest(ownerId, b.id, b.next, b.end - b.next);
          b.restRecorded = true;
        }),
    );
    return done.map((b) => ({ id: b.id, credits: b.end - b.next + b.refunded }));
  }

  private ownerOf(ownerId: string): OwnerBlocks {
    let owner = this.owners.get(ownerId);
    if (!owner) {
      owner = { live: null, blocks: new Map(), use: new UseRate(), wantedAt: -Infinity, ahead: false, line: null, shared: false };
      this.owners.set(ownerId, owner);
      this.timer ??= setInterval(() => this.tick(), TICK_MS).unref();
    }
    return owner;
  }

  /** Owners with nothing held are forgotten FORGET_MS after their last take; the timer stops with the last. */
  private forgetIfEmpty(ownerId: string, owner: OwnerBlocks): void {
    if (owner.blocks.size > 0 || this.clock.now() - owner.use.lastTake < FORGET_MS) return;
    this.owners.delete(ownerId);
    if (this.owners.size === 0 && this.timer) {
      clearInterval(this.timer);
      this.timer = null;
    }
  }

  /**
   * Retires idle and expired blocks (a roomy one idle only while its owner's credits are wanted), and gives back
   * the finished ones: at once for an owner without a live block (near zero, its refunds come back within a
   * tick), else with the owner's next take, or after IDLE_MS.
   */
  private tick(): void {
    const now = this.clock.now();
    for (const [ownerId, owner] of this.owners) {
      const live = owner.live;
      const keptIdle = live?.roomy === true && now - owner.wantedAt >= WANTED_MS;
      if (live && ((!keptIdle && now - live.lastUsed >= IDLE_MS) || now >= live.until)) this.retire(owner, live);
      const due = finished(owner).some((b) => !owner.live || now - b.retiredAt >= IDLE_MS);
      if (due) this.writes.add(ownerId, 0).catch((err: unknown) => this.options.onBackgroundError?.(err));
      else if (owner.blocks.size === 0) this.forgetIfEmpty(ownerId, owner);
    }
  }
}

/** A roomy block running out of credits or of lease: its successor is due. */
function runningOut(block: Block, now: number, leaseMs: number): boolean {
  return block.end - block.next < (block.end - block.from) * AHEAD_CREDITS_SHARE || block.until - now < leaseMs * AHEAD_LEASE_SHARE;
}

/** Blocks that hand out nothing more and whose calls are over: ready to go back. */
function finished(owner: OwnerBlocks): Block[] {
  return [...owner.blocks.values()].filter((b) => b.retired && b.running === 0);
}

/** Of the charges `among` (indexes into costs, in order of arrival), those that fit in `balance`, first come first served. */
function fitting(costs: number[], among: number[], balance: number): number[] {
  const chosen: number[] = [];
  let left = balance;
  for (const i of among) {
    if (costs[i] > left) continue;
    chosen.push(i);
    left -= costs[i];
  }
  return chosen;
}
