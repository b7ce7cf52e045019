// The one way mail leaves the service: nodemailer over SMTP (SMTP_URL), pooled connections with short
// timeouts, so a slow or dead server fails an attempt quickly (the outbox retries it; no request waits on it).
// Failures are described in words without the message, its links or the server's credentials.
import { createTransport } from 'nodemailer';

/** One message as it is sent: text and HTML of the same content, extra headers (List-Unsubscribe...). */
export interface OutgoingMail {
  to: string;
  subject: string;
  text: string;
  html: string;
  headers?: Record<string, string>;
  /** The Message-ID's left part: the outbox id, so that a message sent twice by a crash can be recognised. */
  id: string;
}

export interface MailTransport {
  send(mail: OutgoingMail): Promise<void>;
  close(): void;
}

/** What an attempt came to, for the outbox: whether trying again can help, and what to log. */
export interface SendFailure {
  /** The server refused for good (an SMTP 5xx answer): retrying the same message cannot help. */
  permanent: boolean;
  /** Error code and SMTP status with the server's words, at most 300 characters; never the message. */
  reason: string;
}

const CONNECT_TIMEOUT_MS = 10_000;
const GREETING_TIMEOUT_MS = 10_000;
const SOCKET_TIMEOUT_MS = 30_000;
/** The longest an attempt can take (connect, greet, then a silent socket): the outbox's claim outlasts it. */
export const MAX_SEND_MS = CONNECT_TIMEOUT_MS + GREETING_TIMEOUT_MS + SOCKET_TIMEOUT_MS;

export function smtpTransport(smtpUrl: string, from: string): MailTransport {
  const messageHost = /@([^>\s]+)>?$/.exec(from)?.[1] ?? 'tool-server.invalid';
  const transporter = createTransport(
    {
      url: smtpUrl,
      pool: true,
      maxConnections: 2,
      connectionTimeout: CONNECT_TIMEOUT_MS,
      greetingTimeout: GREETING_TIMEOUT_MS,
      socketTimeout: SOCKET_TIMEOUT_MS,
      dnsTimeout: CONNECT_TIMEOUT_MS,
      logger: false,
      debug: false,
    },
    { from },
  );
  return {
    async send(mail) {
      await transporter.sendMail({
        to: mail.to,
        subject: mail.subject,
        text: mail.text,
        html: mail.html,
        headers: mail.headers,
        messageId: `<${mail.id}@${messageHost}>`,
      });
    },
    close() {
      transporter.close();
    },
  };
}

/** Classifies a failed attempt: 5xx answers are final, anything else (4xx, network, timeouts) may pass later. */
export function sendFailure(err: unknown): SendFailure {
  const e = err as { code?: string; responseCode?: number; response?: string; message?: string };
  const status = typeof e.responseCode === 'number' ? e.responseCode : undefined;
  // The server's answer names the command that failed; our message text never appears in it.
  const words = (e.response ?? e.message ?? String(err)).replace(/\s+/g, ' ').trim();
  const reason = [e.code, status, words].filter((part) => part !== undefined && part !== '').join(' ');
  return { permanent: status !== undefined && status >= 500 && status < 600, reason: reason.slice(0, 300) };
}
