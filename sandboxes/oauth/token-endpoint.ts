// Helpers of the token endpoints: how the client authenticates, and the record every request leaves.
import type http from 'node:http';
import { sendJson } from '../harness.ts';
import type { SandboxClock } from './clock.ts';
import type { OAuthClient, TokenRequestRecord } from './oauth.ts';

/** The client id and secret of an `Authorization: Basic` header, or undefined when there is none or it is malformed. */
export function basicCredentials(header: string | undefined): { id: string; secret: string } | undefined {
  const match = /^Basic\s+([A-Za-z0-9+/=]+)\s*$/i.exec(header ?? '');
  if (!match) return undefined;
  const decoded = Buffer.from(match[1], 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon < 0) return undefined;
  // RFC 6749 §2.3.1: both parts are form-encoded before they are joined.
  const part = (s: string) => {
    try {
      return decodeURIComponent(s.replace(/\+/g, ' '));
    } catch {
      return s;
    }
  };
  return { id: part(decoded.slice(0, colon)), secret: part(decoded.slice(colon + 1)) };
}

/** The registered client with this id and secret. */
export function authenticateClient(clients: readonly OAuthClient[], id: unknown, secret: unknown): OAuthClient | undefined {
  return clients.find((c) => c.clientId === id && c.clientSecret === secret);
}

/** What a token endpoint answers: a status and a JSON body. */
export interface TokenAnswer {
  status: number;
  body: Record<string, unknown>;
}

/** Every request that reached a token endpoint, and how it was answered. */
export class TokenLog {
  readonly records: TokenRequestRecord[] = [];

  constructor(private readonly clock: SandboxClock) {}

  count(grantType?: string): number {
    return grantType === undefined ? this.records.length : this.records.filter((r) => r.grantType === grantType).length;
  }

  /** Records the request and sends the answer (never cached, as RFC 6749 §5.1 asks). */
  answer(res: http.ServerResponse, grantType: unknown, clientId: unknown, answer: TokenAnswer): void {
    const error = typeof answer.body.error === 'string' ? answer.body.error : undefined;
    this.records.push({
      at: this.clock.now(),
      grantType: typeof grantType === 'string' ? grantType : '',
      ...(typeof clientId === 'string' ? { clientId } : {}),
      status: answer.status,
      ...(error ? { error } : {}),
    });
    sendJson(res, answer.status, answer.body, { 'cache-control': 'no-store', pragma: 'no-cache' });
  }
}
