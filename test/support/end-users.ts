// End users under test: an owner with credits (signed in over HTTP, as the dashboard is) and a server whose one
// tool, Jira's search, is bound to the caller's own account.
import { expect } from 'vitest';
import { HttpBrowser } from './connect.ts';
import { type TestService, createOwner } from './service.ts';

/** A new owner with `credits`, and the HTTP browser signed in as them. */
export async function ownerWithCredits(svc: TestService, credits = 100): Promise<{ id: string; b: HttpBrowser }> {
  const browser = new HttpBrowser(svc.url);
  const id = await browser.signUp();
  await svc.call('POST', `/api/admin/owners/${id}/credits`, { token: svc.operatorToken, body: { amount: credits } });
  return { id, b: browser };
}

/** Another owner, made by the operator (sign-ups from one address are limited): its browser speaks with its token. */
export async function invitedOwner(svc: TestService, credits = 0): Promise<{ id: string; b: HttpBrowser }> {
  const made = await createOwner(svc, credits);
  const browser = new HttpBrowser(svc.url);
  browser.token = made.token;
  return { id: made.id, b: browser };
}

export const balanceOf = async (b: HttpBrowser) => (await b.api('GET', '/api/me')).body.balance as number;

/** A server with one Jira search tool (`search_issues`) bound to the caller's own account; its id. */
export async function callersServer(b: HttpBrowser, name = 'Acts as the caller'): Promise<string> {
  const server = await b.api('POST', '/api/servers', { name });
  const tool = await b.api('POST', `/api/servers/${server.body.id}/tools`, {
    base_tool: 'tracker_search_issues',
    name: 'search_issues',
    account_id: 'end_user',
  });
  expect(tool.status, JSON.stringify(tool.body)).toBe(201);
  return server.body.id as string;
}
