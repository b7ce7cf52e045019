// E-mail on the management API: verifying an address (the link's token, and asking for a new link), the
// owner's e-mail alerts (Settings) and their one-click unsubscribe links, and the operator's view of the
// outbox (what was sent, what waits, what was given up). Password reset lives with sign-in (auth.ts).
import type Router from '@koa/router';
import { ALERT_KINDS, ALERT_LABELS, type AlertKind, awaitingVerification } from '../access/owners.ts';
import { requestInfo } from '../audit/request-context.ts';
import { grantCredits } from './admin.ts';
import { type ApiDeps, type Guards, me } from './context.ts';
import { ApiError, jsonBody, onlyFields, str } from './http.ts';

const MAIL_OFF = 'E-mail is off on this service (the operator has not set SMTP_URL)';

export function emailRoutes(router: Router, d: ApiDeps, g: Guards): void {
  const mail = () => {
    if (!d.mail) throw new ApiError(403, MAIL_OFF);
    return d.mail;
  };

  // The page of a verification link posts its token here; no session is needed (the link is the proof).
  router.post('/auth/verify-email', async (ctx) => {
    const body = await jsonBody(ctx, d.maxBodyBytes);
    onlyFields(body, ['token']);
    const token = str(body, 'token', { required: true })!;
    const link = await mail().links.use('verify_address', token);
    const before = link && (await d.owners.markVerified(link.ownerId, link.email));
    if (!link || !before)
      throw new ApiError(400, 'This verification link is not valid: it was used already, replaced by a newer one, or has expired. Sign in to get a new one');
    // Open sign-up's starting credits come with the verification (once: only one verification sees must_verify).
    if (before.must_verify) await grantCredits(d, before._id, d.site.startingCredits);
    await d.audit.record(requestInfo(ctx), {
      action: 'email.verify',
      owner_id: before._id,
      target: { type: 'owner', id: before._id, name: before.email },
      changes: before.must_verify ? { starting_credits: d.site.startingCredits } : undefined,
    });
    ctx.body = { email: before.email, verified: true };
  });

  router.post('/me/verification', g.ownerVerifying, async (ctx) => {
    const owner = me(ctx);
    const m = mail();
    if (!awaitingVerification(owner)) throw new ApiError(409, `${owner.email} is verified already`);
    const wait = await m.limits.resendVerification(owner._id);
    if (wait) {
      ctx.set('Retry-After', String(wait));
      throw new ApiError(429, `A new link was sent a short while ago: check your inbox (and spam folder), or try again in ${Math.ceil(wait / 60)} minutes.`);
    }
    await m.linkMail.sendVerification(owner);
    ctx.status = 202;
    ctx.body = { message: `A new link is on its way to ${owner.email}; the earlier ones no longer work.` };
  });

  router.put('/me/email-alerts', g.owner, async (ctx) => {
    const body = await jsonBody(ctx, d.maxBodyBytes);
    onlyFields(body, [...ALERT_KINDS]);
    const owner = me(ctx);
    const off = new Set(owner.alerts_off ?? []);
    for (const [kind, on] of Object.entries(body) as Array<[AlertKind, unknown]>) {
      if (typeof on !== 'boolean') throw new ApiError(400, `"${kind}" must be true (e-mail me) or false`);
      if (on) off.delete(kind);
      else off.add(kind);
    }
    const after = ALERT_KINDS.filter((kind) => off.has(kind));
    await d.owners.setAlertsOff(owner._id, after);
    const changed = ALERT_KINDS.filter((kind) => (owner.alerts_off ?? []).includes(kind) !== after.includes(kind));
    if (changed.length)
      await d.audit.record(requestInfo(ctx), {
        action: 'owner.update',
        owner_id: owner._id,
        target: { type: 'owner', id: owner._id, name: owner.email },
        changes: { email_alerts: Object.fromEntries(changed.map((kind) => [kind, after.includes(kind) ? 'off' : 'on'])) },
      });
    ctx.body = { email_alerts: Object.fromEntries(ALERT_KINDS.map((kind) => [kind, !after.includes(kind)])) };
  });

  // One-click unsubscribe (RFC 8058): mail programs POST `List-Unsubscribe=One-Click` here, the unsubscribe
  // page posts without a body. The signed token is all the authority it takes, and all it can do is this.
  router.post('/unsubscribe', async (ctx) => {
    const target = mail().alerts.readUnsubscribeToken(ctx.query.token);
    if (!target) throw new ApiError(400, 'This unsubscribe link is not valid: turn e-mail alerts off on the Settings page instead');
    const owner = await d.owners.get(target.ownerId);
    if (!owner) throw new ApiError(404, 'The account of this unsubscribe link no longer exists');
    if (!owner.alerts_off?.includes(target.kind)) {
      await d.owners.turnAlertOff(owner._id, target.kind);
      await d.audit.record(requestInfo(ctx), {
        action: 'owner.update',
        owner_id: owner._id,
        target: { type: 'owner', id: owner._id, name: owner.email },
        changes: { email_alerts: { [target.kind]: 'off' }, via: 'unsubscribe link' },
      });
    }
    ctx.body = { unsubscribed: target.kind, alert: ALERT_LABELS[target.kind], email: owner.email };
  });

  // The operator's view of the outbox: never a message's content or recipient (the owner id says whose).
  router.get('/admin/mail', g.operator, async (ctx) => {
    const state = ctx.query.state;
    if (state !== undefined && state !== 'queued' && state !== 'sent' && state !== 'failed') throw new ApiError(400, '"state" must be queued, sent or failed');
    ctx.body = { mail: d.mail ? 'on' : 'off', messages: d.mail ? await d.mail.outbox.list(state) : [] };
  });
}
