// The controls every OAuth sandbox gives a test (OAuthControls), built from the parts each one has.
import type http from 'node:http';
import type { SandboxClock } from './clock.ts';
import type { GrantBook } from './grants.ts';
import type { OAuthControls } from './oauth.ts';
import { sendErrorPage, type Brand } from './pages.ts';
import type { TokenLog } from './token-endpoint.ts';

export interface ControlParts<D> {
  clock: SandboxClock;
  book: GrantBook<D>;
  log: TokenLog;
  brand: Brand;
  /** The authorize route, relative to where the pages are served ('/authorize', '/v1/oauth/authorize'). */
  authorizePath: string;
  /** Answers the authorize route: GET renders the consent page, POST takes its form. */
  consent(req: http.IncomingMessage, res: http.ServerResponse, url: URL): Promise<void>;
}

export function oauthControls<D>({ clock, book, log, brand, authorizePath, consent }: ControlParts<D>): OAuthControls {
  return {
    clock,
    tokenRequests: log.records,
    tokenRequestCount: (grantType) => log.count(grantType),
    revokeApp: (clientId) => book.revokeClient(clientId),
    grants: () => book.views(),
    pages(req, res) {
      const url = new URL(req.url ?? '/', 'http://sandbox');
      if (url.pathname === authorizePath && (req.method === 'GET' || req.method === 'POST')) {
        consent(req, res, url).catch((err: unknown) => res.headersSent || sendErrorPage(res, 500, brand, `The sandbox failed: ${String(err)}`));
        return;
      }
      res.writeHead(404, { 'content-type': 'text/plain; charset=utf-8' });
      res.end('Not found');
    },
  };
}
