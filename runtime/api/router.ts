// The management API under /api: the operator's routes and the owners' routes, one module per resource.
import Router from '@koa/router';
import { accountsRoutes } from './accounts.ts';
import { authRoutes } from './auth.ts';
import { callsRoutes } from './calls.ts';
import { connectRoutes } from './connect.ts';
import { endUsersRoutes } from './end-users.ts';
import { adminRoutes } from './admin.ts';
import { auditRoutes } from './audit.ts';
import { type ApiDeps, guards } from './context.ts';
import { emailRoutes } from './email.ts';
import { apiErrors } from './http.ts';
import { keysRoutes } from './keys.ts';
import { oauthRoutes } from './oauth.ts';
import { sandboxRoutes } from './sandbox.ts';
import { serversRoutes } from './servers.ts';
import { toolsRoutes } from './custom-tools.ts';
import { usageRoutes } from './usage.ts';

export type { ApiDeps };

export function createApiRouter(d: ApiDeps): Router {
  const router = new Router({ prefix: '/api' });
  // Answers are one owner's data, and some show a secret once (keys, tokens, invitations): no cache may keep them.
  router.use(async (ctx, next) => {
    ctx.set('Cache-Control', 'no-store');
    await next();
  });
  router.use(apiErrors);
  const g = guards(d);
  for (const routes of [
    authRoutes,
    emailRoutes,
    adminRoutes,
    serversRoutes,
    keysRoutes,
    connectRoutes,
    accountsRoutes,
    endUsersRoutes,
    toolsRoutes,
    usageRoutes,
    callsRoutes,
    oauthRoutes,
    auditRoutes,
    sandboxRoutes,
  ])
    routes(router, d, g);
  return router;
}
