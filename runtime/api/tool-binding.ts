// Checks a custom-tool binding: base tool exists, the account is the owner's and of the provider's kind,
// defaults are valid for the base schema, locked parameters have a default.
import type { Accounts } from '../accounts/accounts.ts';
import type { Engine } from '../engine/engine.ts';
import { MAX_ARGUMENT_DEPTH, nestedDeeperThan } from '../json-depth.ts';
import type { CatalogSource } from '../toolspec/live.ts';
import { CALLER_ACCOUNT, TOOL_NAME_PATTERN, type CustomToolDoc } from '../servers/custom-tools.ts';
import { ApiError, storableKeys } from './http.ts';

type Binding = Pick<CustomToolDoc, 'name' | 'base_tool' | 'account_id' | 'defaults' | 'locked' | 'description'>;

export async function checkToolBinding(
  d: { catalog: CatalogSource; accounts: Accounts; engine: Engine },
  ownerId: string,
  body: Record<string, unknown>,
): Promise<Binding> {
  const baseId = body.base_tool;
  const tools = d.catalog.current.tools;
  const base = typeof baseId === 'string' ? tools.get(baseId) : undefined;
  if (!base) throw new ApiError(400, `"base_tool" must be one of: ${[...tools.keys()].join(', ')}`);

  const name = body.name === undefined || body.name === null ? base.spec.id : body.name;
  if (typeof name !== 'string' || !TOOL_NAME_PATTERN.test(name)) throw new ApiError(400, '"name" must be 1-128 letters, digits, "_", "." or "-"');

  const needs = base.spec.account ?? 'required';
  const kind = base.provider.spec.account.kind;
  let accountId: string | null = null;
  if (body.account_id === CALLER_ACCOUNT) {
    // The calling end user's own account of the provider, found at each call.
    if (needs === 'none') throw new ApiError(400, `"account_id": ${base.spec.id} uses no account, so it cannot act as the caller's own`);
    accountId = CALLER_ACCOUNT;
  } else if (body.account_id !== undefined && body.account_id !== null) {
    if (typeof body.account_id !== 'string')
      throw new ApiError(400, `"account_id" must be the id of one of your accounts, or "${CALLER_ACCOUNT}" (the caller's own)`);
    const account = await d.accounts.get(ownerId, body.account_id);
    if (!account) throw new ApiError(400, `"account_id": no account ${body.account_id} of yours exists`);
    if (account.kind !== kind) throw new ApiError(400, `"account_id": ${base.spec.id} needs a ${kind} account, not a ${account.kind} account`);
    accountId = account._id;
  } else if (needs === 'required') {
    throw new ApiError(400, `"account_id" is required: ${base.spec.id} needs a ${kind} account`);
  }

  const defaults = body.defaults ?? {};
  if (defaults === null || typeof defaults !== 'object' || Array.isArray(defaults)) throw new ApiError(400, '"defaults" must be an object of parameter values');
  // Before any walk of the value: validation and cloning recurse, and would exhaust the stack.
  if (nestedDeeperThan(defaults, MAX_ARGUMENT_DEPTH)) throw new ApiError(400, `"defaults" are nested more than ${MAX_ARGUMENT_DEPTH} levels deep (the limit)`);
  storableKeys(defaults, 'defaults');
  const invalid = d.engine.checkDefaults(base, defaults as Record<string, unknown>);
  if (invalid) throw new ApiError(400, `"defaults" are not valid for ${base.spec.id}: ${invalid}`);

  const locked = body.locked ?? [];
  if (!Array.isArray(locked) || !locked.every((p) => typeof p === 'string')) throw new ApiError(400, '"locked" must be an array of parameter names');
  const withoutDefault = locked.filter((p) => !Object.hasOwn(defaults, p));
  if (withoutDefault.length) throw new ApiError(400, `"locked" parameters need a value in "defaults": ${withoutDefault.join(', ')}`);

  const description = body.description ?? null;
  if (description !== null && (typeof description !== 'string' || description.trim() === ''))
    throw new ApiError(400, '"description" must be a non-empty string');
  return {
    name,
    base_tool: base.spec.id,
    account_id: accountId,
    defaults: defaults as Record<string, unknown>,
    locked: [...new Set(locked as string[])],
    description,
  };
}
