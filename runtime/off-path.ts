// Work that a call starts and does not wait for (the next credit block taken before the live one runs out, a
// rate-limit window's points reserved after its first call was admitted) belongs to the service, not to that
// call: it runs in the async context of whoever made the runner (a component, made when the service starts),
// not in the context of the request that happened to start it, which ends with its answer.
import { AsyncResource } from 'node:async_hooks';

/** Starts `work` in the runner's own async context and returns what it returns. */
export type OffPath = <T>(work: () => T) => T;

/** A runner bound to the async context it is made in. */
export function offPath(): OffPath {
  const scope = new AsyncResource('off-path');
  return (work) => scope.runInAsyncScope(work);
}
