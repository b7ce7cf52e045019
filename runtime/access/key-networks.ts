// The networks each API key was used from, so that its owner hears of a key used from somewhere new. A network
// is the client address's /24 (IPv4) or /48 (IPv6; an IPv4-mapped address counts as IPv4): what one office,
// one home line or one cloud subnet usually shares, so a new address of the same machine is not news. A key's
// first network is recorded without a word (that is where its owner put it to work); each later one is told
// (`onNew`). On the hot path this costs a lookup in memory: the store is asked once per key and network per
// hour and instance, off the call's path.
import ipaddr from 'ipaddr.js';
import type { Logger } from '../log.ts';
import type { StoreClock } from '../store/clock.ts';
import { type Collection, type Doc, DuplicateKeyError, type Store } from '../store/port.ts';
import { TtlCache } from '../ttl-cache.ts';

interface KeyNetworkDoc extends Doc {
  /** _id is `<key id> <network>`: one document per key and network, whoever records it first. */
  key_id: string;
  owner_id: string;
  network: string;
  first_at: Date;
}

/** A key used from a network it had not been used from, after its first. */
export interface NewNetwork {
  keyId: string;
  ownerId: string;
  serverId: string;
  network: string;
  at: Date;
}

const KNOWN_MS = 3_600_000;
/** Addresses whose network is kept; past that the memo starts again (a network's parse costs microseconds). */
const RECENT_ADDRESSES = 10_000;

/** A client's address parsed, an IPv4-mapped IPv6 address as the IPv4 one; null for what is not an address. */
export function parseAddress(address: string): ipaddr.IPv4 | ipaddr.IPv6 | null {
  if (!ipaddr.isValid(address)) return null;
  const ip = ipaddr.parse(address);
  return ip.kind() === 'ipv6' && (ip as ipaddr.IPv6).isIPv4MappedAddress() ? (ip as ipaddr.IPv6).toIPv4Address() : ip;
}

/** The /24 or /48 of an address, as CIDR text; null for what is not an IP address. */
export function networkOf(address: string): string | null {
  const ip = parseAddress(address);
  if (!ip) return null;
  if (ip.kind() === 'ipv4') return `${ip.toByteArray().slice(0, 3).join('.')}.0/24`;
  const parts = (ip as ipaddr.IPv6).parts;
  return `${new ipaddr.IPv6([...parts.slice(0, 3), 0, 0, 0, 0, 0]).toString()}/48`;
}

export class KeyNetworks {
  private readonly docs: Collection<KeyNetworkDoc>;
  /** `<key id> <network>` this instance knows to be recorded (or is recording). */
  private readonly known = new TtlCache<string, true>(KNOWN_MS, 50_000);
  /** The networks of recent addresses: parsing an address is most of what a call's seen() costs. */
  private readonly networks = new Map<string, string | null>();

  private readonly clock: StoreClock;

  constructor(
    store: Store,
    private readonly onNew: (event: NewNetwork) => Promise<void>,
    private readonly logger: Logger,
  ) {
    this.docs = store.collection<KeyNetworkDoc>('key_networks');
    // First-seen times in the store's time: the alerts' daily limit per key counts them.
    this.clock = store.clock;
  }

  /** A key authenticated from `address` for `serverId`: records its network if new (never waits, never throws). */
  seen(key: { _id: string; owner_id: string }, address: string, serverId: string): void {
    let network = this.networks.get(address);
    if (network === undefined) {
      if (this.networks.size >= RECENT_ADDRESSES) this.networks.clear();
      this.networks.set(address, (network = networkOf(address)));
    }
    if (!network) return;
    const id = `${key._id} ${network}`;
    if (this.known.get(id)) return;
    this.known.set(id, true);
    void this.record(id, { keyId: key._id, ownerId: key.owner_id, serverId, network, at: this.clock.date() }).catch((err) => {
      // Asked again at the next call.
      this.known.delete(id);
      this.logger.error({ err, keyId: key._id }, 'cannot record the network a key was used from');
    });
  }

  /** How many networks the key was first used from since `since` (the alerts' own limit). */
  countSince(keyId: string, since: Date): Promise<number> {
    return this.docs.countDocuments({ key_id: keyId, first_at: { $gte: since } });
  }

  private async record(id: string, event: NewNetwork): Promise<void> {
    const first = (await this.docs.findOne({ key_id: event.keyId })) === null;
    try {
      await this.docs.insertOne({ _id: id, key_id: event.keyId, owner_id: event.ownerId, network: event.network, first_at: event.at });
    } catch (err) {
      if (err instanceof DuplicateKeyError) return; // known already (another instance, or before this one started)
      throw err;
    }
    if (!first) await this.onNew(event);
  }
}
