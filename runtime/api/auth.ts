// Owners' own account: sign-up, sign-in and sign-out of the dashboard (session cookie), invitations,
// password change, "sign out everywhere", and management tokens for scripts.
import type Router from '@koa/router';
import type { Context } from 'koa';
import { creditAlert, normalizeEmail, publicOwnerToken, type OwnerDoc } from '../access/owners.ts';
import { PasswordsBusyError, passwordProblem } from '../access/passwords.ts';
import { SESSION_COOKIE, csrfTokenOf } from '../access/sessions.ts';
import { DEVICE_COOKIE, DEVICE_COOKIE_SECONDS, type SignInRefusal } from '../access/sign-in-limits.ts';
import { requestInfo } from '../audit/request-context.ts';
import { DuplicateKeyError } from '../store/port.ts';
import { MAX_GRANT, grantCredits } from './admin.ts';
import { type ApiDeps, type Guards, crossSiteProblem, me, sessionActor, sessionOwner, withRoom } from './context.ts';
import { ApiError, jsonBody, notFound, onlyFields, str } from './http.ts';

const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;
const WRONG_CREDENTIALS = 'Wrong e-mail or password';

/** The outcome of a password check; when the service was too busy to check it, `giveBack` returns the attempt first. */
async function notChecked<T>(check: Promise<T>, giveBack: () => Promise<void>): Promise<T> {
  try {
    return await check;
  } catch (err) {
    if (err instanceof PasswordsBusyError) await giveBack();
    throw err;
  }
}

export function authRoutes(router: Router, d: ApiDeps, g: Guards): void {
  const secure = d.site.publicUrl.startsWith('https:');
  const setCookie = (ctx: Context, value: string, maxAgeSeconds: number) =>
    ctx.append('Set-Cookie', `${SESSION_COOKIE}=${value}; Path=/; HttpOnly; SameSite=Lax; Max-Age=${maxAgeSeconds}${secure ? '; Secure' : ''}`);

  /**
   * Starts a session for the owner and answers with who they are and the CSRF token of the session. The browser
   * also gets (or renews) the device cookie of this e-mail: strangers' failed sign-ins never lock it out.
   */
  const signIn = async (ctx: Context, owner: OwnerDoc, status: number) => {
    const { id, doc } = await d.sessions.start(owner._id);
    setCookie(ctx, id, Math.floor((doc.expires_at.getTime() - Date.now()) / 1000));
    ctx.append(
      'Set-Cookie',
      `${DEVICE_COOKIE}=${d.signInLimits.deviceCookie(owner.email)}; Path=/api/auth; HttpOnly; SameSite=Strict; Max-Age=${DEVICE_COOKIE_SECONDS}${secure ? '; Secure' : ''}`,
    );
    ctx.status = status;
    ctx.body = { id: owner._id, email: owner.email, csrf_token: csrfTokenOf(id) };
    return id;
  };
  const ownerTarget = (owner: OwnerDoc) => ({ type: 'owner', id: owner._id, name: owner.email });
  /** Sign-in forms may be posted by scripts (no Origin), but never from a foreign page. */
  const notCrossSite = (ctx: Context) => {
    if (!ctx.get('origin') && !ctx.get('sec-fetch-site')) return;
    const problem = crossSiteProblem(ctx, d.site.publicUrl);
    if (problem) throw new ApiError(403, problem);
  };
  const tooMany = (ctx: Context, seconds: number, what: string): never => {
    ctx.set('Retry-After', String(seconds));
    throw new ApiError(429, `${what} Try again in ${Math.ceil(seconds / 60)} minute${seconds > 60 ? 's' : ''}.`);
  };
  const SIGN_IN_REFUSALS: Record<SignInRefusal['reason'], string> = {
    email_and_address: 'Too many failed sign-ins for this e-mail from your address.',
    address: 'Too many failed sign-ins from your address.',
    email: 'Too many failed sign-ins for this account from browsers that never signed in to it: sign in from a browser you signed in with before, or wait.',
    device: 'Too many failed sign-ins from this browser.',
  };
  const newPassword = (value: unknown, email?: string) => {
    const problem = passwordProblem(value, email);
    if (problem) throw new ApiError(400, problem);
    return value as string;
  };

  router.post('/auth/signup', async (ctx) => {
    notCrossSite(ctx);
    if (d.site.signup !== 'open') throw new ApiError(403, 'Sign-up is by invitation only on this service: ask its operator for an invitation link');
    const body = await jsonBody(ctx, d.maxBodyBytes);
    onlyFields(body, ['email', 'password']);
    const given = typeof body.email === 'string' ? normalizeEmail(body.email) : body.email;
    const email = str({ email: given }, 'email', { required: true, pattern: EMAIL, what: 'an e-mail address' })!;
    const password = newPassword(body.password, email);
    const wait = await d.signInLimits.signUp(ctx.ip);
    if (wait) tooMany(ctx, wait, 'Too many sign-ups from this address.');
    let owner: OwnerDoc;
    try {
      owner = await d.owners.signUp(email, password);
    } catch (err) {
      if (err instanceof DuplicateKeyError) throw new ApiError(409, 'An account with this e-mail already exists: sign in instead');
      throw err;
    }
    await grantCredits(d, owner._id, d.site.startingCredits);
    const session = await signIn(ctx, owner, 201);
    await d.audit.record(requestInfo(ctx), {
      action: 'owner.create',
      owner_id: owner._id,
      target: ownerTarget(owner),
      changes: { via: 'sign-up', starting_credits: d.site.startingCredits },
      actor: sessionActor(session),
    });
  });

  router.post('/auth/login', async (ctx) => {
    notCrossSite(ctx);
    const body = await jsonBody(ctx, d.maxBodyBytes);
    const email = typeof body.email === 'string' ? normalizeEmail(body.email) : '';
    const password = typeof body.password === 'string' ? body.password : '';
    if (!email || !password) throw new ApiError(400, '"email" and "password" are required');
    // Counted before the password is checked: parallel attempts cannot all pass a limit none has counted yet.
    const device = d.signInLimits.deviceOf(ctx.cookies.get(DEVICE_COOKIE), email);
    const refused = await d.signInLimits.attemptSignIn(email, ctx.ip, device);
    if (refused) tooMany(ctx, refused.waitSeconds, SIGN_IN_REFUSALS[refused.reason]);
    const owner =
      password.length <= 1024 ? await notChecked(d.owners.checkPassword(email, password), () => d.signInLimits.signInNotChecked(email, ctx.ip, device)) : null;
    if (!owner) {
      const known = await d.owners.byEmail(email);
      await d.audit.record(requestInfo(ctx), {
        action: 'signin.fail',
        owner_id: known?._id ?? null,
        target: known ? ownerTarget(known) : { type: 'email', id: email },
      });
      throw new ApiError(401, WRONG_CREDENTIALS);
    }
    await d.signInLimits.signedIn(email, ctx.ip, device);
    const session = await signIn(ctx, owner, 200);
    await d.audit.record(requestInfo(ctx), { action: 'signin.ok', owner_id: owner._id, target: ownerTarget(owner), actor: sessionActor(session) });
  });

  router.post('/auth/invitation', async (ctx) => {
    notCrossSite(ctx);
    const body = await jsonBody(ctx, d.maxBodyBytes);
    onlyFields(body, ['token', 'password']);
    const token = str(body, 'token', { required: true })!;
    const password = newPassword(body.password);
    const owner = await d.owners.acceptInvite(token, password);
    if (!owner) throw new ApiError(400, 'This invitation link is not valid: it was used already or has expired. Ask the operator for a new one');
    const session = await signIn(ctx, owner, 200);
    await d.audit.record(requestInfo(ctx), { action: 'invitation.accept', owner_id: owner._id, target: ownerTarget(owner), actor: sessionActor(session) });
  });

  router.post('/auth/logout', g.ownerRevoking, async (ctx) => {
    const session = await sessionOwner(d, ctx);
    if (session) await d.sessions.end(session.sessionId);
    await d.audit.record(requestInfo(ctx), { action: 'signout', owner_id: me(ctx)._id, target: ownerTarget(me(ctx)) });
    setCookie(ctx, '', 0);
    ctx.status = 204;
  });

  const meView = async (owner: OwnerDoc) => {
    const alert = creditAlert(owner);
    return {
      id: owner._id,
      email: owner.email,
      created_at: owner.created_at,
      balance: await d.credits.balance(owner._id),
      credit_alert: alert.threshold,
      credit_alert_default: alert.fallback,
    };
  };
  router.get('/me', g.owner, async (ctx) => {
    ctx.body = await meView(me(ctx));
  });
  // The owner's settings: the balance below which the dashboard warns (null: back to the default).
  router.patch('/me', g.owner, async (ctx) => {
    const body = await jsonBody(ctx, d.maxBodyBytes);
    onlyFields(body, ['credit_alert']);
    const owner = me(ctx);
    const value = body.credit_alert;
    if (value !== null && (typeof value !== 'number' || !Number.isInteger(value) || value < 0 || value > MAX_GRANT))
      throw new ApiError(400, `"credit_alert" must be a whole number of credits from 0 to ${MAX_GRANT}, or null for the default`);
    const before = creditAlert(owner);
    await d.owners.setCreditAlert(owner._id, value);
    const updated = { ...owner, credit_alert: value ?? undefined };
    const after = creditAlert(updated);
    if (before.threshold !== after.threshold || before.custom !== after.custom)
      await d.audit.record(requestInfo(ctx), {
        action: 'owner.update',
        owner_id: owner._id,
        target: ownerTarget(owner),
        changes: { credit_alert: { from: before.custom ? before.threshold : 'default', to: after.custom ? after.threshold : 'default' } },
      });
    ctx.body = await meView(updated);
  });

  router.post('/me/password', g.ownerRevoking, async (ctx) => {
    const body = await jsonBody(ctx, d.maxBodyBytes);
    onlyFields(body, ['current_password', 'new_password', 'revoke_tokens']);
    const owner = me(ctx);
    const current = typeof body.current_password === 'string' ? body.current_password : '';
    const revokeTokens = body.revoke_tokens ?? true;
    if (typeof revokeTokens !== 'boolean') throw new ApiError(400, '"revoke_tokens" must be true or false');
    const password = newPassword(body.new_password, owner.email);
    // Whoever holds a session or a token must not be able to guess the password from here: counted like sign-ins.
    const wait = await d.signInLimits.attemptPasswordChange(owner._id);
    if (wait) tooMany(ctx, wait, 'Too many wrong current passwords.');
    const right =
      current.length <= 1024 &&
      owner.password_hash !== undefined &&
      (await notChecked(d.owners.checkPassword(owner.email, current), () => d.signInLimits.passwordChangeNotChecked(owner._id))) !== null;
    if (!right) throw new ApiError(400, '"current_password" does not match your password');
    await d.signInLimits.passwordChanged(owner._id);
    await d.owners.setPassword(owner._id, password);
    // Every other session ends: whoever knew the old password is signed out; by default their scripts' tokens too.
    const ended = await d.sessions.endAll(owner._id, (await sessionOwner(d, ctx))?.sessionId);
    if (revokeTokens) await d.owners.revokeAllTokens(owner._id);
    await d.audit.record(requestInfo(ctx), {
      action: 'password.change',
      owner_id: owner._id,
      target: ownerTarget(owner),
      changes: { other_sessions_ended: ended, management_tokens_revoked: revokeTokens },
    });
    ctx.status = 204;
  });

  router.post('/me/sessions/revoke-all', g.ownerRevoking, async (ctx) => {
    const ended = await d.sessions.endAll(me(ctx)._id);
    await d.audit.record(requestInfo(ctx), {
      action: 'session.revoke_all',
      owner_id: me(ctx)._id,
      target: ownerTarget(me(ctx)),
      changes: { sessions_ended: ended },
    });
    if (ctx.cookies.get(SESSION_COOKIE)) setCookie(ctx, '', 0);
    ctx.status = 204;
  });

  router.get('/me/tokens', g.owner, async (ctx) => {
    ctx.body = { tokens: (await d.owners.listTokens(me(ctx)._id)).map(publicOwnerToken) };
  });
  router.post('/me/tokens', g.owner, async (ctx) => {
    const body = await jsonBody(ctx, d.maxBodyBytes, true);
    onlyFields(body, ['name']);
    const name = str(body, 'name') ?? 'token';
    const { doc, token } = await withRoom(
      d,
      ctx,
      'tokens',
      (owner) => d.owners.countTokens(owner),
      () => d.owners.issueToken(me(ctx)._id, name),
    );
    await d.audit.record(requestInfo(ctx), { action: 'token.create', owner_id: me(ctx)._id, target: { type: 'token', id: doc._id, name: doc.name } });
    ctx.status = 201;
    ctx.body = { ...publicOwnerToken(doc), token };
  });
  router.delete('/me/tokens/:id', g.ownerRevoking, async (ctx) => {
    const revoked = (await d.owners.listTokens(me(ctx)._id)).find((t) => t._id === ctx.params.id);
    if (!(await d.owners.revokeToken(me(ctx)._id, ctx.params.id))) throw notFound('Token');
    await d.audit.record(requestInfo(ctx), {
      action: 'token.revoke',
      owner_id: me(ctx)._id,
      target: { type: 'token', id: ctx.params.id, name: revoked?.name },
    });
    ctx.status = 204;
  });
}
