// Connect links: how an owner's end user connects accounts of their own, with no sign-in on this service.
//
//   made by the owner's backend   POST /api/connect-sessions: a single-use link for one end user, 30 minutes,
//                                 limited to some providers, returning to the owner's app. Its first opening
//                                 binds it to that browser and gives the browser an end-user session (a cookie):
//                                 the link then works only there.
//   made inside a call            a tool that acts as the caller found no usable account: the link is signed (no
//                                 record), names the end user and the provider, and works only in a browser that
//                                 already holds that end user's session: whoever else opens it is refused, so
//                                 nobody can attach their own account to another person.
//
// Either link leads to the same page (runtime/dashboard/end-user-connect.ts); each provider is connected by the
// connect flow (connect-flows.ts) with the end user as holder, or by a token form where it has no OAuth app.
import { createHmac } from 'node:crypto';
import type { StoreClock } from '../store/clock.ts';
import type { Collection, Doc, Store } from '../store/port.ts';
import { randomId, randomToken, sameSecret, sha256 } from '../secrets.ts';

/** A connect link works this long. */
export const CONNECT_LINK_MINUTES = 30;
/** An end user's browser session lasts this long (a link from a call works in it meanwhile). */
export const END_USER_SESSION_DAYS = 30;
export const END_USER_COOKIE = 'ts_end_user';
export const CONNECT_PATH = '/connect/s';

interface ConnectSessionDoc extends Doc {
  owner_id: string;
  end_user_id: string;
  /** Provider ids the page offers (null: every provider). */
  providers: string[] | null;
  /** Where the page's "Done" goes (the owner's app); null: the page says the person may close it. */
  return_url: string | null;
  token_hash: string;
  created_at: Date;
  expires_at: Date;
  /** SHA-256 of the end-user session of the browser that opened it first (null until then). */
  browser: string | null;
}

interface EndUserSessionDoc extends Doc {
  /** _id is the SHA-256 of the cookie's value. */
  owner_id: string;
  end_user_id: string;
  created_at: Date;
  expires_at: Date;
}

/** A link, whichever way it was made. */
export interface ConnectLink {
  /** Made by the owner's backend (single use, bound on first opening) or inside a call (needs the end user's browser). */
  via: 'api' | 'call';
  id: string;
  ownerId: string;
  endUserId: string;
  providers: string[] | null;
  returnUrl: string | null;
  expiresAt: Date;
  /** The browser session it is bound to (api links, once opened). */
  browser: string | null;
}

/** The end user in a browser: who, and the SHA-256 of their session (connect flows bind to it). */
export interface EndUserBrowser {
  ownerId: string;
  endUserId: string;
  session: string;
  csrfToken: string;
}

/** Why a link cannot be used here, in words. */
export class ConnectLinkRefusal extends Error {
  constructor(
    readonly title: string,
    message: string,
    readonly status: number,
  ) {
    super(message);
  }
}

export const endUserCsrfToken = (sessionId: string) => sha256(`end-user csrf\0${sessionId}`);

export class ConnectSessions {
  private readonly sessions: Collection<ConnectSessionDoc>;
  private readonly browsers: Collection<EndUserSessionDoc>;
  private readonly clock: StoreClock;

  constructor(
    store: Store,
    /** Signs the links made inside calls. */
    private readonly secret: Buffer,
    private readonly site: { publicUrl: string },
  ) {
    this.sessions = store.collection<ConnectSessionDoc>('connect_sessions');
    this.browsers = store.collection<EndUserSessionDoc>('end_user_sessions');
    this.clock = store.clock;
  }

  /** A single-use link for an end user (the owner's backend hands it to them). */
  async create(o: { ownerId: string; endUserId: string; providers: string[] | null; returnUrl: string | null }): Promise<{ url: string; expires_at: Date }> {
    const token = randomToken('', 32);
    const now = this.clock.date();
    const doc: ConnectSessionDoc = {
      _id: randomId('cs_'),
      owner_id: o.ownerId,
      end_user_id: o.endUserId,
      providers: o.providers,
      return_url: o.returnUrl,
      token_hash: sha256(token),
      created_at: now,
      expires_at: new Date(now.getTime() + CONNECT_LINK_MINUTES * 60_000),
      browser: null,
    };
    await this.sessions.insertOne(doc);
    return { url: `${this.site.publicUrl}${CONNECT_PATH}/${token}`, expires_at: doc.expires_at };
  }

  /** The link a call answers when its caller has no usable account of a provider: signed, not stored. */
  callLink(ownerId: string, endUserId: string, provider: string): string {
    const now = this.clock.now();
    const body = Buffer.from(JSON.stringify({ o: ownerId, e: endUserId, p: provider, x: now + CONNECT_LINK_MINUTES * 60_000 })).toString('base64url');
    return `${this.site.publicUrl}${CONNECT_PATH}/c.${body}.${this.sign(body)}`;
  }

  /** The link of a token from a URL, or the refusal that says why it does not work. */
  async resolve(token: string): Promise<ConnectLink> {
    const gone = new ConnectLinkRefusal(
      'This connect link does not work',
      'It is not a link this service made, or it was changed. Ask the app that sent you here for a new one.',
      404,
    );
    const expired = new ConnectLinkRefusal(
      'This connect link has expired',
      `A connect link works for ${CONNECT_LINK_MINUTES} minutes. Ask the app that sent you here for a new one.`,
      410,
    );
    if (token.startsWith('c.')) {
      const [, body, mac] = token.split('.');
      if (!body || !mac || !sameSecret(mac, this.sign(body))) throw gone;
      const claims = JSON.parse(Buffer.from(body, 'base64url').toString('utf8')) as { o: string; e: string; p: string; x: number };
      if (claims.x <= this.clock.now()) throw expired;
      return {
        via: 'call',
        id: token,
        ownerId: claims.o,
        endUserId: claims.e,
        providers: [claims.p],
        returnUrl: null,
        expiresAt: new Date(claims.x),
        browser: null,
      };
    }
    const doc = await this.sessions.findOne({ token_hash: sha256(token) });
    if (!doc) throw gone;
    if (doc.expires_at <= this.clock.date()) throw expired;
    return {
      via: 'api',
      id: doc._id,
      ownerId: doc.owner_id,
      endUserId: doc.end_user_id,
      providers: doc.providers,
      returnUrl: doc.return_url,
      expiresAt: doc.expires_at,
      browser: doc.browser,
    };
  }

  /**
   * Lets a browser use a link, or refuses it. A backend's link is bound to the first browser that opens it
   * (which gets, or keeps, that end user's session: `start` is called for a new one); a call's link needs the
   * end user's session already. Returns the browser's end user session.
   */
  async admit(link: ConnectLink, current: EndUserBrowser | null, start: () => Promise<EndUserBrowser>): Promise<EndUserBrowser> {
    const sameUser = current && current.ownerId === link.ownerId && current.endUserId === link.endUserId ? current : null;
    if (link.via === 'call') {
      if (sameUser) return sameUser;
      throw new ConnectLinkRefusal(
        'Open this link where you use the app',
        current
          ? 'This link belongs to another person than the one this browser connected accounts for, so nothing can be connected with it here.'
          : 'This browser has not connected accounts through the app that sent you here, so it cannot tell that you are the person the link is for. Open the app and connect your account from there.',
        403,
      );
    }
    if (link.browser) {
      if (sameUser && sameUser.session === link.browser) return sameUser;
      throw new ConnectLinkRefusal(
        'This connect link was already used',
        'A connect link works in the one browser that opened it first. Ask the app that sent you here for a new one.',
        409,
      );
    }
    const browser = sameUser ?? (await start());
    const bound = await this.sessions.findOneAndUpdate({ _id: link.id, browser: null }, { $set: { browser: browser.session } });
    if (!bound)
      throw new ConnectLinkRefusal(
        'This connect link was already used',
        'It was opened in another browser a moment ago. Ask the app that sent you here for a new one.',
        409,
      );
    return browser;
  }

  /** A new end-user session for a browser: the cookie's value (returned once) and what it stands for. */
  async startBrowser(ownerId: string, endUserId: string): Promise<{ cookie: string; browser: EndUserBrowser; expires: Date }> {
    const cookie = randomToken('', 32);
    const now = this.clock.date();
    const expires = new Date(now.getTime() + END_USER_SESSION_DAYS * 86_400_000);
    await this.browsers.insertOne({ _id: sha256(cookie), owner_id: ownerId, end_user_id: endUserId, created_at: now, expires_at: expires });
    return { cookie, expires, browser: { ownerId, endUserId, session: sha256(cookie), csrfToken: endUserCsrfToken(cookie) } };
  }

  /** The end user of a browser's cookie, or null. */
  async browserOf(cookie: string | undefined): Promise<EndUserBrowser | null> {
    if (!cookie) return null;
    const doc = await this.browsers.findOne({ _id: sha256(cookie) });
    if (!doc || doc.expires_at <= this.clock.date()) return null;
    return { ownerId: doc.owner_id, endUserId: doc.end_user_id, session: doc._id, csrfToken: endUserCsrfToken(cookie) };
  }

  /** Ends everything of an end user here: their links and browser sessions (their deletion). */
  async forgetEndUser(ownerId: string, endUserId: string): Promise<void> {
    await this.sessions.deleteMany({ owner_id: ownerId, end_user_id: endUserId });
    await this.browsers.deleteMany({ owner_id: ownerId, end_user_id: endUserId });
  }

  /** Deletes links and browser sessions past their time. */
  async sweep(now = this.clock.date()): Promise<number> {
    return (await this.sessions.deleteMany({ expires_at: { $lt: now } })) + (await this.browsers.deleteMany({ expires_at: { $lt: now } }));
  }

  private sign(body: string): string {
    return createHmac('sha256', this.secret).update(`connect link\0${body}`).digest('base64url');
  }
}
