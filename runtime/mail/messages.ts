// What the service writes to owners: each message is said once, as paragraphs, one action and a footer, and
// rendered twice from that: plain text and simple HTML (inline styles only, every value escaped). Every
// message names the service's dashboard (PUBLIC_URL).

export interface MailContent {
  subject: string;
  paragraphs: string[];
  /** The one thing to do, as a button in HTML and a bare URL in text. */
  action?: { label: string; url: string };
  /** Smaller print: why this message came, how to stop alerts. */
  footer: string[];
}

export interface RenderedMail {
  subject: string;
  text: string;
  html: string;
}

const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
/** Escaped text whose http(s) and mailto: addresses are links (a sentence's closing punctuation stays out of them). */
const linked = (s: string) =>
  s
    .split(/((?:https?:\/\/|mailto:)[^\s]*[^\s).,;:!?'"])/)
    .map((part, i) => (i % 2 ? `<a href="${escapeHtml(part)}" style="color:#1f5fbf">${escapeHtml(part)}</a>` : escapeHtml(part)))
    .join('');

export function renderMail(c: MailContent): RenderedMail {
  const text = [...c.paragraphs, ...(c.action ? [`${c.action.label}:\n${c.action.url}`] : []), '--', ...c.footer].join('\n\n') + '\n';
  const p = (s: string, style = 'margin:0 0 16px') => `<p style="${style}">${linked(s)}</p>`;
  const button = c.action
    ? `<p style="margin:24px 0"><a href="${escapeHtml(c.action.url)}" style="background:#1f5fbf;color:#ffffff;padding:10px 18px;border-radius:6px;text-decoration:none;display:inline-block">${escapeHtml(c.action.label)}</a></p>` +
      p(`If the button does not work, open this address: ${c.action.url}`, 'margin:0 0 16px;font-size:13px;color:#555555;word-break:break-all')
    : '';
  const html = [
    '<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width">',
    `<title>${escapeHtml(c.subject)}</title></head>`,
    '<body style="margin:0;padding:24px;background:#f4f5f7;font-family:-apple-system,Segoe UI,Roboto,Helvetica,Arial,sans-serif;font-size:15px;line-height:1.5;color:#1a1a1a">',
    '<div style="max-width:560px;margin:0 auto;background:#ffffff;border-radius:8px;padding:24px">',
    p('Tool Server', 'margin:0 0 16px;font-weight:bold;color:#1f5fbf'),
    ...c.paragraphs.map((s) => p(s)),
    button,
    '<hr style="border:none;border-top:1px solid #dddddd;margin:24px 0 16px">',
    ...c.footer.map((s) => p(s, 'margin:0 0 8px;font-size:13px;color:#555555')),
    '</div></body></html>',
  ].join('\n');
  return { subject: c.subject, text, html };
}

const utc = (d: Date) => `${d.toISOString().replace('T', ' ').slice(0, 16)} UTC`;
const plural = (n: number, word: string) => `${n.toLocaleString('en-US')} ${word}${n === 1 ? '' : 's'}`;

/** The footer of every alert: which setting sent it, and the two ways to stop it. */
export function alertFooter(o: { publicUrl: string; setting: string; unsubscribeUrl: string }): string[] {
  return [
    `You get this e-mail because "${o.setting}" is on in your e-mail alerts (${o.publicUrl}/settings#alerts).`,
    `Stop e-mails like this one with one click: ${o.unsubscribeUrl}`,
  ];
}

/** An alert's words; its footer is added by whoever sends it (alertFooter). */
type AlertContent = Omit<MailContent, 'footer'>;

export const messages = {
  verifyAddress(o: { publicUrl: string; link: string; hours: number }): MailContent {
    return {
      subject: 'Confirm your e-mail address for Tool Server',
      paragraphs: [
        `Someone (we hope you) created a Tool Server account with this address at ${o.publicUrl}.`,
        `Confirm the address to start using it: until then the account can do nothing else (no API keys, no tokens). The link works once, for ${plural(o.hours, 'hour')}.`,
      ],
      action: { label: 'Confirm my address', url: o.link },
      footer: ['If you did not create this account, ignore this e-mail: nothing happens without the link.'],
    };
  },

  passwordReset(o: { publicUrl: string; link: string; minutes: number }): MailContent {
    return {
      subject: 'Reset your Tool Server password',
      paragraphs: [
        `Someone asked to reset the password of the Tool Server account with this address at ${o.publicUrl}.`,
        `Choose a new password with the link below. It works once, for ${plural(o.minutes, 'minute')}. Every browser signed in to the account is then signed out.`,
      ],
      action: { label: 'Choose a new password', url: o.link },
      footer: ['If you did not ask for this, ignore this e-mail: your password stays as it is.'],
    };
  },

  creditsLow(o: { publicUrl: string; balance: number; threshold: number; help: { text: string; url?: string } }): AlertContent {
    return {
      subject: o.balance === 0 ? 'Your Tool Server credits ran out' : `Your Tool Server credits are below ${o.threshold.toLocaleString('en-US')}`,
      paragraphs: [
        o.balance === 0
          ? `Your balance is 0 credits: every tool call is refused until credits are added.`
          : `Your balance is ${plural(o.balance, 'credit')}, below your alert at ${plural(o.threshold, 'credit')}. When it reaches 0, every tool call is refused.`,
        o.help.url ? `${o.help.text} Get more credits: ${o.help.url}` : o.help.text,
        'We tell you once each time the balance falls below the alert; the next e-mail comes after credits are added.',
      ],
      action: { label: 'See your balance', url: `${o.publicUrl}/settings#credits` },
    };
  },

  accountNeedsReconnect(o: { account: string; provider: string; reason: string | null; reconnectUrl: string }): AlertContent {
    return {
      subject: `Reconnect your ${o.provider} account "${o.account}"`,
      paragraphs: [
        `Your ${o.provider} account "${o.account}" needs you: ${o.reason ? o.reason.replace(/[.\s]+$/, '') : 'the provider no longer accepts its connection'}.`,
        'Until you reconnect it, the tools bound to it are refused (without charging credits).',
      ],
      action: { label: 'Reconnect the account', url: o.reconnectUrl },
    };
  },

  keyNewNetwork(o: { publicUrl: string; key: string; prefix: string; network: string; at: Date; server: string | null }): AlertContent {
    return {
      subject: `Your API key "${o.key}" was used from a new network`,
      paragraphs: [
        `Your API key "${o.key}" (${o.prefix}…) was used from a network it had not been used from before: ${o.network}, at ${utc(o.at)}${o.server ? `, on the server "${o.server}"` : ''}.`,
        'If this was you or your agents (a new machine, another office, a cloud region), nothing needs doing. If not, revoke the key now: whoever has it can call your tools and spend your credits.',
      ],
      action: { label: 'Review your API keys', url: `${o.publicUrl}/keys` },
    };
  },
};
