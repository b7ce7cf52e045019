// Who may create an owner account. SIGNUP=invite: only the operator's invitations. SIGNUP=open with e-mail on
// (SMTP_URL): anyone, and the address is verified before the account can do anything else. SIGNUP=open with
// e-mail off: for local use only, since nobody's address can be checked: the service says it runs locally
// (PUBLIC_URL is a loopback address, the default of `npm start`) and the browser is on this machine (a
// loopback client address); anyone else is told to ask for an invitation.
import { parseAddress } from './key-networks.ts';

export interface SignUpSite {
  signup: 'open' | 'invite';
  publicUrl: string;
  mailOn: boolean;
}

/** What open sign-up is on this service, for the start-up log and the pages. */
export function signUpMode(site: SignUpSite): 'verified' | 'local' | 'invite' {
  if (site.signup === 'invite') return 'invite';
  return site.mailOn ? 'verified' : 'local';
}

/** Whether a visitor at `clientAddress` may sign up. */
export function maySignUp(site: SignUpSite, clientAddress: string): boolean {
  const mode = signUpMode(site);
  if (mode !== 'local') return mode === 'verified';
  const host = new URL(site.publicUrl).hostname.replace(/^\[|\]$/g, '');
  return (host === 'localhost' || isLoopback(host)) && isLoopback(clientAddress);
}

const isLoopback = (address: string): boolean => parseAddress(address)?.range() === 'loopback';

/** The start-up log's words on e-mail and sign-up. */
export function signUpSaid(site: SignUpSite): string {
  switch (signUpMode(site)) {
    case 'invite':
      return 'sign-up is by invitation only (SIGNUP=invite)';
    case 'verified':
      return 'open sign-up: anyone may sign up, and the address is verified by e-mail before the account can do anything else';
    case 'local':
      return (
        'open sign-up is for local use only, since e-mail is off: only a browser on this machine may sign up, and only while PUBLIC_URL is a ' +
        'loopback address; everyone else needs an invitation from the operator (set SMTP_URL and MAIL_FROM to verify addresses and open sign-up to all)'
      );
  }
}
