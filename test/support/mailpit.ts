// The SMTP server of the test runs, Mailpit: SMTP_URL and MAILPIT_URL as `npm run -s peer:mail -- start` prints
// them and `.ci/run` exports them. Without them: one loud warning and the e-mail tests skipped locally; with
// CI=true a missing server fails the run. Tests read what the service sent through Mailpit's HTTP API
// (/api/v1/search, /api/v1/message/{id}) and follow its links; each test writes to addresses of its own, so
// suites running at once never see each other's mail.

export const SMTP_URL = process.env.SMTP_URL || undefined;
export const MAILPIT_URL = process.env.MAILPIT_URL || undefined;
export const mailpitAvailable = Boolean(SMTP_URL && MAILPIT_URL);

if (!mailpitAvailable) {
  const message =
    '\n*** E-mail tests need SMTP_URL and MAILPIT_URL: eval "$(npm run -s peer:mail -- start)"; export SMTP_URL MAILPIT_URL (Mailpit, built with Go); they are SKIPPED ***\n';
  if (process.env.CI === 'true') throw new Error(message);
  console.warn(message);
}

/** The service's e-mail settings for a test service on the peer. */
export const MAIL_ENV = { SMTP_URL: SMTP_URL ?? '', MAIL_FROM: 'Tool Server <no-reply@tool-server.test>' };

/** A fresh address on a domain of its own: nobody else's mail is ever found for it. */
export const freshAddress = (label = 'owner') => `${label}-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 8)}@mail.test`;

export interface MailSummary {
  ID: string;
  Subject: string;
  To: Array<{ Address: string }>;
  Created: string;
}

export interface Mail extends MailSummary {
  MessageID: string;
  From: { Name: string; Address: string };
  Text: string;
  HTML: string;
  ListUnsubscribe: { Header: string; Links: string[]; Errors: string; HeaderPost: string };
}

async function api<T>(method: string, path: string, body?: unknown): Promise<T> {
  const res = await fetch(`${MAILPIT_URL}${path}`, {
    method,
    headers: body === undefined ? {} : { 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  if (!res.ok) throw new Error(`Mailpit ${method} ${path}: ${res.status} ${await res.text()}`);
  const text = await res.text();
  return (text && res.headers.get('content-type')?.includes('json') ? JSON.parse(text) : text) as T;
}

/** Every message to `address`, oldest first. */
export async function mailTo(address: string): Promise<MailSummary[]> {
  const found = await api<{ messages: MailSummary[] }>('GET', `/api/v1/search?query=${encodeURIComponent(`to:"${address}"`)}&limit=500`);
  return found.messages.reverse();
}

/** A message in full; its text with the line ends a program writes (SMTP sends CRLF). */
export async function readMail(id: string): Promise<Mail> {
  const mail = await api<Mail>('GET', `/api/v1/message/${id}`);
  return { ...mail, Text: mail.Text.replace(/\r\n/g, '\n') };
}

/** The message's headers as Mailpit parsed them (each name to its values). */
export const mailHeaders = (id: string): Promise<Record<string, string[]>> => api('GET', `/api/v1/message/${id}/headers`);

/**
 * Waits (polling every 100 ms, up to `timeoutMs`) until `address` has `count` messages whose subject matches,
 * and returns the last of them in full.
 */
export async function waitForMail(address: string, subject: RegExp, o: { count?: number; timeoutMs?: number } = {}): Promise<Mail> {
  const deadline = Date.now() + (o.timeoutMs ?? 30_000);
  for (;;) {
    const matching = (await mailTo(address)).filter((m) => subject.test(m.Subject));
    if (matching.length >= (o.count ?? 1)) return readMail(matching[(o.count ?? 1) - 1].ID);
    if (Date.now() > deadline) throw new Error(`no e-mail ${subject} to ${address} within ${o.timeoutMs ?? 30_000} ms (found: ${matching.length})`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** The first link of the message's text that starts with `prefix` (a page of the service). */
export function linkIn(mail: Mail, prefix: string): string {
  const url = mail.Text.split(/\s+/).find((word) => word.startsWith(prefix));
  if (!url) throw new Error(`no link starting with ${prefix} in "${mail.Subject}":\n${mail.Text}`);
  return url;
}
