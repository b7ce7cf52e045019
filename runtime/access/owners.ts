// Account owners: e-mail, dashboard password (scrypt), one-time invitations, and their management tokens
// (`mcpo_...`, stored as SHA-256). Invitation tokens are stored hashed too.
import type { Collection, Doc, Store } from '../store/port.ts';
import { randomId, randomToken, sha256 } from '../secrets.ts';
import { decoyHash, hashPassword, verifyPassword } from './passwords.ts';

export interface OwnerDoc extends Doc {
  email: string;
  created_at: Date;
  /** Absent until the owner sets a password (an invited owner, or one made by the operator). */
  password_hash?: string;
  /** SHA-256 of the pending one-time invitation token and when it stops working. */
  invite_hash?: string;
  invite_expires_at?: Date;
  /** The balance below which the dashboard warns, as the owner set it; absent: the default (creditAlert). */
  credit_alert?: number;
  /** The credits of the last grant (operator or starting credits): the default alert is a tenth of it. */
  last_grant?: number;
  /** Signed up on open sign-up with e-mail on: nothing but verifying the address until it is verified. */
  must_verify?: boolean;
  /** When the address was proven (a verification link, or a password reset link used). */
  email_verified_at?: Date;
  /** The e-mail alerts the owner turned off (Settings, or an unsubscribe link). */
  alerts_off?: AlertKind[];
  /** The low-credit e-mail was sent and the balance has not been topped up since (once per fall below the alert). */
  credit_alerted?: boolean;
}

/** The e-mail alerts an owner gets unless they turn them off. */
export const ALERT_KINDS = ['credits_low', 'account_reconnect', 'key_new_network'] as const;
export type AlertKind = (typeof ALERT_KINDS)[number];
/** Each alert as Settings and the e-mails name it. */
export const ALERT_LABELS: Record<AlertKind, string> = {
  credits_low: 'My credits fall below my alert',
  account_reconnect: 'An account needs reconnecting',
  key_new_network: 'An API key is used from a new network',
};

/** Whether the owner may do nothing but verify their address yet. */
export const awaitingVerification = (owner: Pick<OwnerDoc, 'must_verify'>): boolean => owner.must_verify === true;

/** The default alert without any grant on record. */
export const DEFAULT_CREDIT_ALERT = 20;

/** Below which balance the dashboard warns: the owner's own threshold, else 10% of the last grant, else 20 credits. */
export function creditAlert(owner: Pick<OwnerDoc, 'credit_alert' | 'last_grant'>): { threshold: number; custom: boolean; fallback: number } {
  const fallback = owner.last_grant ? Math.ceil(owner.last_grant / 10) : DEFAULT_CREDIT_ALERT;
  return owner.credit_alert === undefined ? { threshold: fallback, custom: false, fallback } : { threshold: owner.credit_alert, custom: true, fallback };
}

export interface OwnerTokenDoc extends Doc {
  owner_id: string;
  name: string;
  hash: string;
  prefix: string;
  created_at: Date;
  last_used_at: Date | null;
}

export const OWNER_TOKEN_PREFIX = 'mcpo_';
const INVITE_DAYS = 7;
/** last_used_at of a token is written at most this often. */
const TOUCH_EVERY_MS = 60_000;

export const normalizeEmail = (email: string): string => email.trim().toLowerCase();

/** The list view of a management token: never the token or its hash. */
export function publicOwnerToken(t: OwnerTokenDoc): Record<string, unknown> {
  return { id: t._id, name: t.name ?? 'token', prefix: t.prefix, created_at: t.created_at, last_used_at: t.last_used_at ?? null };
}

export class Owners {
  private readonly owners: Collection<OwnerDoc>;
  private readonly tokens: Collection<OwnerTokenDoc>;

  constructor(private readonly store: Store) {
    this.owners = store.collection<OwnerDoc>('owners');
    this.tokens = store.collection<OwnerTokenDoc>('owner_tokens');
  }

  /** Creates an owner (by the operator) with its first management token and a one-time invitation to set a password. */
  async create(email: string): Promise<{ owner: OwnerDoc; token: string; invite: string }> {
    const invite = randomToken('', 32);
    const owner: OwnerDoc = {
      _id: randomId('own_'),
      email: normalizeEmail(email),
      created_at: this.store.clock.date(),
      invite_hash: sha256(invite),
      invite_expires_at: new Date(this.store.clock.now() + INVITE_DAYS * 86_400_000),
    };
    await this.owners.insertOne(owner);
    return { owner, token: (await this.issueToken(owner._id, 'first token')).token, invite };
  }

  /**
   * Creates an owner who signed up with a password; `mustVerify`: the address is to be verified before anything
   * else. Throws DuplicateKeyError when the e-mail is taken.
   */
  async signUp(email: string, password: string, mustVerify = false): Promise<OwnerDoc> {
    const owner: OwnerDoc = {
      _id: randomId('own_'),
      email: normalizeEmail(email),
      created_at: this.store.clock.date(),
      password_hash: await hashPassword(password),
    };
    if (mustVerify) owner.must_verify = true;
    await this.owners.insertOne(owner);
    return owner;
  }

  /**
   * The address `email` is proven (a link sent to it was used): the owner as it was before, or null when the
   * owner's address is another by now. `must_verify` is cleared here, so exactly one verification sees it set.
   */
  markVerified(ownerId: string, email: string): Promise<OwnerDoc | null> {
    return this.owners.findOneAndUpdate(
      { _id: ownerId, email },
      { $set: { email_verified_at: this.store.clock.date() }, $unset: { must_verify: '' } },
      { returnDocument: 'before' },
    );
  }

  /** The alerts the owner has turned off (the others are on). */
  async setAlertsOff(ownerId: string, off: AlertKind[]): Promise<void> {
    await this.owners.updateOne({ _id: ownerId }, { $set: { alerts_off: off } });
  }

  /** Turns one alert off (an unsubscribe link); false when the owner is gone. */
  async turnAlertOff(ownerId: string, kind: AlertKind): Promise<boolean> {
    return (await this.owners.updateOne({ _id: ownerId }, { $addToSet: { alerts_off: kind } })).matched === 1;
  }

  /** Takes the low-credit alert: true for the one caller that may send it until the balance is topped up. */
  async claimCreditAlert(ownerId: string): Promise<boolean> {
    return (await this.owners.updateOne({ _id: ownerId, credit_alerted: { $ne: true } }, { $set: { credit_alerted: true } })).modified === 1;
  }

  /** After a grant or a new alert: when the balance is at or above the alert, the next fall below it is told again. */
  async rearmCreditAlert(ownerId: string, balance: number): Promise<void> {
    const owner = await this.get(ownerId);
    if (owner?.credit_alerted && balance >= creditAlert(owner).threshold) await this.owners.updateOne({ _id: ownerId }, { $unset: { credit_alerted: '' } });
  }

  /** The owner for an e-mail and password, or null; an unknown e-mail costs the same scrypt as a wrong password. */
  async checkPassword(email: string, password: string): Promise<OwnerDoc | null> {
    const owner = await this.owners.findOne({ email: normalizeEmail(email) });
    const ok = await verifyPassword(password, owner?.password_hash ?? (await decoyHash()));
    return ok && owner?.password_hash ? owner : null;
  }

  async setPassword(ownerId: string, password: string): Promise<void> {
    await this.owners.updateOne({ _id: ownerId }, { $set: { password_hash: await hashPassword(password) } });
  }

  /** Uses a one-time invitation: sets the password and forgets the invitation. Null when it is unknown or expired. */
  async acceptInvite(invite: string, password: string): Promise<OwnerDoc | null> {
    const hash = sha256(invite);
    // Claimed atomically, so two uses of the same link cannot both succeed.
    const owner = await this.owners.findOneAndUpdate(
      { invite_hash: hash, invite_expires_at: { $gt: this.store.clock.date() } },
      { $set: { password_hash: await hashPassword(password) }, $unset: { invite_hash: '', invite_expires_at: '' } },
    );
    return owner;
  }

  async issueToken(ownerId: string, name: string): Promise<{ doc: OwnerTokenDoc; token: string }> {
    const token = randomToken(OWNER_TOKEN_PREFIX);
    const doc: OwnerTokenDoc = {
      _id: randomId('otk_'),
      owner_id: ownerId,
      name,
      hash: sha256(token),
      prefix: token.slice(0, 10),
      created_at: this.store.clock.date(),
      last_used_at: null,
    };
    await this.tokens.insertOne(doc);
    return { doc, token };
  }

  /** How many management tokens the owner has (revoked ones are deleted; its quota counts them). */
  countTokens(ownerId: string): Promise<number> {
    return this.tokens.countDocuments({ owner_id: ownerId });
  }

  listTokens(ownerId: string): Promise<OwnerTokenDoc[]> {
    return this.tokens.find({ owner_id: ownerId }, { sort: { created_at: 1 } });
  }

  /** Revokes (deletes) every token of the owner; how many there were. */
  revokeAllTokens(ownerId: string): Promise<number> {
    return this.tokens.deleteMany({ owner_id: ownerId });
  }

  /** Revokes (deletes) a token of the owner; false when there is none with that id. */
  async revokeToken(ownerId: string, id: string): Promise<boolean> {
    return (await this.tokens.deleteOne({ _id: id, owner_id: ownerId })) === 1;
  }

  /** The owner's low-balance alert; null goes back to the default. */
  async setCreditAlert(ownerId: string, threshold: number | null): Promise<void> {
    await this.owners.updateOne({ _id: ownerId }, threshold === null ? { $unset: { credit_alert: '' } } : { $set: { credit_alert: threshold } });
  }

  /** Remembers a grant's size (the default alert follows it); debits and empty grants say nothing. */
  async noteGrant(ownerId: string, amount: number): Promise<void> {
    if (amount > 0) await this.owners.updateOne({ _id: ownerId }, { $set: { last_grant: amount } });
  }

  byEmail(email: string): Promise<OwnerDoc | null> {
    return this.owners.findOne({ email: normalizeEmail(email) });
  }

  get(id: string): Promise<OwnerDoc | null> {
    return this.owners.findOne({ _id: id });
  }

  /** The owner a bearer token belongs to, or null. */
  async authenticate(token: string): Promise<OwnerDoc | null> {
    return (await this.authenticateToken(token))?.owner ?? null;
  }

  /** The owner and the management token (which the audit trail names as the actor), or null. */
  async authenticateToken(token: string): Promise<{ owner: OwnerDoc; token: OwnerTokenDoc } | null> {
    if (!token.startsWith(OWNER_TOKEN_PREFIX)) return null;
    const t = await this.tokens.findOne({ hash: sha256(token) });
    if (!t) return null;
    const now = this.store.clock.date();
    if (!t.last_used_at || now.getTime() - t.last_used_at.getTime() >= TOUCH_EVERY_MS)
      await this.tokens.updateOne({ _id: t._id }, { $set: { last_used_at: now } });
    const owner = await this.owners.findOne({ _id: t.owner_id });
    return owner ? { owner, token: t } : null;
  }
}
