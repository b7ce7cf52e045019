// @ts-check
// The dashboard's behaviour: forms and buttons call the management API (/api/...) with the session's CSRF
// token; a form is checked in the page first and every problem is shown at once next to its field, in words
// that use the field's label (the API's own messages too); destructive actions are confirmed; a new key is
// revealed once (with client commands containing it); the navigation menu, tabs, charts' values, a tool's
// "Try" and its settings in a dialog. Plain ES module; no inline handlers (CSP forbids them). Type-checked by
// `npm run typecheck` (JSDoc types; tsconfig beside this file).

/**
 * An API answer's JSON, as far as this module reads it.
 * @typedef {{ message?: string, key?: string, token?: string, secret?: string, redirect_to?: string, authorize_url?: string, verified?: boolean, detail?: string,
 *   error?: { message?: string, provider_status?: number }, snippets?: Snippet[] } & Record<string, unknown>} ApiBody
 */
/** @typedef {{ ok: boolean, status: number, body: ApiBody | null, headers?: Headers }} ApiResult */
/** @typedef {HTMLInputElement | HTMLSelectElement | HTMLTextAreaElement} Control */
/** @typedef {{ id: string, client: string, where: string, code: string }} Snippet */
/**
 * The answer of POST /api/sandbox, as the dialog shows it.
 * @typedef {{ accounts: Array<{ name: string }>, server: { id: string, name: string, url: string }, tools: number,
 *   key: { key: string }, snippets: Snippet[] }} SandboxSetup
 */
/**
 * A tools/call result as a client gets it (the answer of POST .../tools/{id}/call).
 * @typedef {{ tool: string, balance: number, result: { content: Array<{ type: string, text?: string }>, structuredContent?: unknown, isError: boolean } }} TryAnswer
 */
/** @typedef {{ control: Element, message: string }} Problem */

const csrf = document.querySelector('meta[name="csrf-token"]')?.getAttribute('content') ?? '';
const KEY_PLACEHOLDER = '<YOUR_API_KEY>';

/**
 * The element of an id that the layout always renders (its dialogs), of the expected kind.
 * @template {Element} T
 * @param {string} id
 * @param {new () => T} kind
 * @returns {T}
 */
function required(id, kind) {
  const el = document.getElementById(id);
  if (!(el instanceof kind)) throw new Error(`The page has no ${kind.name} #${id}`);
  return el;
}

/** The element an event happened on, when it is an element (not the document or a text node). */
const eventElement = (/** @type {Event} */ event) => (event.target instanceof Element ? event.target : null);

/** @param {unknown} el */
const isControl = (el) => el instanceof HTMLInputElement || el instanceof HTMLSelectElement || el instanceof HTMLTextAreaElement;

/**
 * @param {string} method
 * @param {string} path
 * @param {unknown} [body]
 * @returns {Promise<ApiResult>}
 */
async function callApi(method, path, body) {
  /** @type {Record<string, string>} */
  const headers = { accept: 'application/json' };
  if (csrf) headers['x-csrf-token'] = csrf;
  if (body !== undefined) headers['content-type'] = 'application/json';
  let res;
  try {
    res = await fetch(path, { method, headers, credentials: 'same-origin', body: body === undefined ? undefined : JSON.stringify(body) });
  } catch {
    return { ok: false, status: 0, body: { message: 'The service could not be reached. Check your connection and try again.' } };
  }
  const text = await res.text();
  let json = null;
  try {
    json = text ? JSON.parse(text) : null;
  } catch {
    json = { message: text };
  }
  if (res.status === 401 && !path.startsWith('/api/auth/')) {
    location.href = `/login?next=${encodeURIComponent(location.pathname + location.search)}`;
  }
  return { ok: res.ok, status: res.status, body: json, headers: res.headers };
}

/**
 * Sets `value` at a dotted path of `target`.
 * @param {Record<string, any>} target
 * @param {string} path
 * @param {unknown} value
 */
function setPath(target, path, value) {
  const parts = path.split('.');
  let o = target;
  for (const p of parts.slice(0, -1)) o = o[p] ??= {};
  o[/** @type {string} */ (parts.at(-1))] = value;
}

/**
 * What a person calls a field: its label's words (without "(required)" and the like), else its own name.
 * @param {Element} control
 */
function labelOf(control) {
  if (control instanceof HTMLElement && control.dataset.label) return control.dataset.label;
  const label = control.id ? document.querySelector(`label[for="${CSS.escape(control.id)}"]`) : null;
  if (label) {
    const words = /** @type {HTMLElement} */ (label.cloneNode(true));
    words.querySelectorAll('.muted').forEach((el) => el.remove());
    const text = words.textContent?.trim();
    if (text) return text;
  }
  return control.getAttribute('aria-label') ?? control.getAttribute('name') ?? 'This field';
}

/** @param {string} word */
const capitalized = (word) => word.charAt(0).toUpperCase() + word.slice(1);

/**
 * The JSON body of a form, typed by each control's data-type (empty controls are left out), and every problem
 * the page can see without asking the API: required fields, e-mail addresses, lengths, numbers and their
 * range, patterns, JSON, a locked parameter without a value.
 * @param {HTMLFormElement} form
 * @returns {{ body: Record<string, any>, problems: Problem[] }}
 */
function formBody(form) {
  /** @type {Record<string, any>} */
  const body = {};
  /** @type {Problem[]} */
  const problems = [];
  /** @param {Control} control @param {string} message */
  const problem = (control, message) => problems.push({ control, message });
  for (const el of form.elements) {
    if (!isControl(el)) continue;
    const control = /** @type {Control} */ (el);
    // :disabled also covers controls inside a disabled fieldset (the tools of a server not chosen).
    if (!control.name || control.matches(':disabled') || control.type === 'submit' || control.type === 'button') continue;
    const required = control.dataset.requires ? form.querySelector(`[name="${control.dataset.requires}"]`) : null;
    if (control.dataset.requires && !(required instanceof HTMLInputElement && required.value.trim())) continue;
    if (control instanceof HTMLInputElement && control.type === 'radio' && !control.checked) continue;
    if (control instanceof HTMLInputElement && control.type === 'checkbox') {
      const locks = control.dataset.lockFor ? document.getElementById(control.dataset.lockFor) : null;
      if (control.checked && isControl(locks) && /** @type {Control} */ (locks).value.trim() === '')
        problem(/** @type {Control} */ (locks), `Give ${labelOf(/** @type {Control} */ (locks))} a value to lock it, or uncheck “Lock”`);
      if (control.dataset.type === 'list') {
        const list = (body[control.name] ??= []);
        if (control.checked) list.push(control.value);
      } else setPath(body, control.name, control.checked);
      continue;
    }
    const text = control.value.trim();
    const label = labelOf(control);
    if (text === '') {
      if (control.required) problem(control, `${label} is required`);
      else if (control.dataset.empty === 'null') setPath(body, control.name, null);
      continue;
    }
    if (control instanceof HTMLInputElement) {
      if (control.type === 'email' && !/^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(text)) problem(control, `${label} must be an e-mail address, e.g. ada@example.com`);
      if (control.minLength > 0 && control.value.length < control.minLength) problem(control, `${label} must be at least ${control.minLength} characters long`);
    }
    if (control.dataset.pattern && !new RegExp(control.dataset.pattern, 'u').test(text)) {
      problem(control, control.dataset.patternMessage || `${label} has the wrong form`);
      continue;
    }
    /** @type {unknown} */
    let value = text;
    switch (control.dataset.type) {
      case 'number':
      case 'integer': {
        const n = Number(text);
        if (!Number.isFinite(n) || (control.dataset.type === 'integer' && !Number.isInteger(n))) {
          problem(control, `${label} must be ${control.dataset.type === 'integer' ? 'a whole number' : 'a number'}`);
          continue;
        }
        const min = control instanceof HTMLInputElement && control.min !== '' ? Number(control.min) : null;
        const max = control instanceof HTMLInputElement && control.max !== '' ? Number(control.max) : null;
        if (min !== null && n < min) problem(control, `${label} must be at least ${min}`);
        if (max !== null && n > max) problem(control, `${label} must be at most ${max}`);
        value = n;
        break;
      }
      case 'boolean':
        value = text === 'true';
        break;
      case 'day-end':
        // A day ends at 23:59:59 UTC; an unchanged day keeps the exact time it had.
        value = control.dataset.exact && control instanceof HTMLInputElement && text === control.defaultValue ? control.dataset.exact : `${text}T23:59:59Z`;
        break;
      case 'lines':
        value = text
          .split('\n')
          .map((l) => l.trim())
          .filter(Boolean);
        break;
      case 'json':
        try {
          value = JSON.parse(text);
        } catch (err) {
          problem(control, `${label} is not valid JSON: ${err instanceof Error ? err.message : String(err)}`);
          continue;
        }
        break;
      default:
        value = control.type === 'password' ? control.value : text;
    }
    setPath(body, control.name, value);
  }
  // Fields a change must always send, empty or not (a custom tool's settings: no default left means none).
  /** @type {Record<string, unknown>} */
  const always = form.dataset.always ? JSON.parse(form.dataset.always) : {};
  for (const [name, list] of Object.entries(body))
    if (Array.isArray(list) && list.length === 0 && !(name in always) && form.querySelector(`[name="${name}"][data-type="list"]`)) delete body[name];
  for (const [name, empty] of Object.entries(always)) body[name] ??= empty;
  if (form.hasAttribute('data-restrictions')) restrictionsOf(form, body);
  return { body, problems };
}

/**
 * The restriction controls (views/partials/restrictions.hbs) as the API takes them: the mode becomes `access`
 * and `tools`, and whatever is left empty clears its restriction (null), so the same form creates and edits.
 * @param {HTMLFormElement} form
 * @param {Record<string, any>} body
 */
function restrictionsOf(form, body) {
  const mode = body.restriction_mode;
  delete body.restriction_mode;
  if (mode === undefined) return;
  body.access = mode === 'read' ? 'read' : 'all';
  body.tools = mode === 'subset' ? (body.tools ?? []) : null;
  if (form.querySelector('[name="expires_at"]') && body.expires_at === undefined) body.expires_at = null;
  if (!body.credit_limit?.credits) body.credit_limit = null;
}

/**
 * A form whose server is chosen in it shows (and sends) only that server's tools.
 * @param {HTMLFormElement} form
 */
function showChosenServer(form) {
  const chosen = form.querySelector('select[data-server-select], [data-server-select]:checked');
  const serverId = chosen instanceof HTMLInputElement || chosen instanceof HTMLSelectElement ? chosen.value : undefined;
  for (const set of form.querySelectorAll('fieldset[data-for-server]')) {
    if (!(set instanceof HTMLFieldSetElement)) continue;
    const on = set.dataset.forServer === serverId;
    set.hidden = !on;
    set.disabled = !on;
  }
}
document.querySelectorAll('form').forEach((form) => form.querySelector('[data-server-select]') && showChosenServer(form));

document.addEventListener('change', (event) => {
  const el = event.target;
  if (!(el instanceof HTMLInputElement || el instanceof HTMLSelectElement) || !el.form) return;
  if (el.matches('[data-server-select]')) return showChosenServer(el.form);
  // Checking a tool means "only these tools".
  if (el instanceof HTMLInputElement && el.matches('input[type="checkbox"][name="tools"]') && el.checked) {
    const subset = el.form.querySelector('input[name="restriction_mode"][value="subset"]');
    if (subset instanceof HTMLInputElement) subset.checked = true;
  }
});

/** @param {HTMLFormElement} form */
function clearErrors(form) {
  form.querySelectorAll('[aria-invalid="true"]').forEach((el) => el.removeAttribute('aria-invalid'));
  form.querySelectorAll('.field-error').forEach((el) => (el.textContent = ''));
  const top = form.querySelector('.form-error');
  if (top) top.textContent = '';
}

/**
 * Every problem next to its field (two about one field are both said), the first field focused, and at the
 * top how many fields need a look; problems that belong to no field go on top too.
 * @param {HTMLFormElement} form
 * @param {Problem[]} problems
 * @param {string[]} [general] problems of no field
 */
function showProblems(form, problems, general = []) {
  /** @type {Map<Element, string[]>} */
  const byControl = new Map();
  // In the order of the form, whichever check found them.
  const ordered = [...problems].sort((a, b) => (a.control.compareDocumentPosition(b.control) & Node.DOCUMENT_POSITION_FOLLOWING ? -1 : 1));
  for (const p of ordered) byControl.set(p.control, [...(byControl.get(p.control) ?? []), p.message]);
  const unplaced = [...general];
  for (const [control, messages] of byControl) {
    const slot = document.getElementById(`${control.id}-error`);
    control.setAttribute('aria-invalid', 'true');
    const text = messages.map((m) => (/[.!?]$/.test(m) ? m : `${m}.`)).join(' ');
    if (slot) slot.textContent = text;
    else unplaced.push(text);
  }
  const first = byControl.keys().next().value;
  if (first instanceof HTMLElement) first.focus();
  const top = form.querySelector('.form-error');
  const summary = byControl.size > 1 ? `${byControl.size} fields need a look: ${[...byControl.keys()].map(labelOf).join(', ')}.` : '';
  if (top) top.textContent = [...unplaced, summary].filter(Boolean).join(' ');
  else if (unplaced.length) alertDialog(unplaced.join(' '));
}

/** The API's and the schema validator's phrases, in plain words. */
const PLAIN = /** @type {Array<[RegExp, string]>} */ ([
  [/must NOT have fewer than 1 characters?/g, 'must not be empty'],
  [/must NOT have fewer than (\d+) characters/g, 'must be at least $1 characters long'],
  [/must NOT have more than (\d+) characters/g, 'must be at most $1 characters long'],
  [/must NOT have fewer than (\d+) items/g, 'needs at least $1 values'],
  [/must NOT have more than (\d+) items/g, 'takes at most $1 values'],
  [/must be <= (\S+)/g, 'must be at most $1'],
  [/must be >= (\S+)/g, 'must be at least $1'],
  [/must be < (\S+)/g, 'must be less than $1'],
  [/must be > (\S+)/g, 'must be more than $1'],
  [/must be integer/g, 'must be a whole number'],
  [/must be number/g, 'must be a number'],
  [/must be string/g, 'must be text'],
  [/must be boolean/g, 'must be true or false'],
  [/must be object/g, 'must be a JSON object'],
  [/must be array/g, 'must be a list'],
  [/must match format "(\w+)"/g, 'must be a valid $1'],
]);

/**
 * Puts each part of the API's message ("x" must …; "y" is required) next to the field it names, with the field's
 * label instead of the API's name for it; whatever names no field of the form goes on top.
 * @param {HTMLFormElement} form
 * @param {string} message
 */
function showApiError(form, message) {
  // "<what>: <problem>; <problem>" (e.g. Invalid arguments: …, "defaults" are not valid for x: …): one part per problem.
  const lead = /^(?:[^"]*?|"[^"]+" are not valid for [^:]+): (?=")/.exec(message);
  const parts = (lead ? message.slice(lead[0].length) : message).split(/; (?=")/);
  /** @type {Problem[]} */
  const problems = [];
  /** @type {string[]} */
  const general = [];
  for (const part of parts) {
    const controls = [...part.matchAll(/"([^"]+)"/g)]
      .map(([, key]) => form.querySelector(`[data-key="${CSS.escape(key)}"]`))
      .filter((el) => el instanceof HTMLElement);
    let words = part;
    for (const [from, to] of PLAIN) words = words.replace(from, to);
    for (const control of controls) words = words.replace(`"${control.getAttribute('data-key')}"`, labelOf(control));
    words = capitalized(words);
    if (controls.length) for (const control of controls) problems.push({ control, message: words });
    else general.push(lead && parts.length > 1 ? `${lead[0]}${words}` : capitalized(part === message ? words : part));
  }
  showProblems(form, problems, general);
}

const SINGLE_SLASH = /^\/(?![/\\])/;

/**
 * Where to go after sign-in: a path of this origin as the browser reads it (it drops tabs and newlines and
 * takes backslashes for slashes, so "/<tab>/host" is "//host"), else "/". The server's safeNext is the same rule.
 * @param {string | null} next
 */
function safeNext(next) {
  if (typeof next !== 'string' || !SINGLE_SLASH.test(next)) return '/';
  let url;
  try {
    url = new URL(next, location.origin);
  } catch {
    return '/';
  }
  const path = url.pathname + url.search + url.hash;
  return url.origin === location.origin && SINGLE_SLASH.test(path) ? path : '/';
}

/**
 * A URL template's `{name}`s filled from an answer, encoded.
 * @param {string} template
 * @param {ApiBody | null} data
 */
const fill = (template, data) => template.replace(/\{(\w+)\}/g, (_, k) => encodeURIComponent(String(data?.[k] ?? '')));

/** An account's health as views/partials/account-state.hbs shows it: the badge's class and words. */
const STATE_BADGES = /** @type {Record<string, [string, string]>} */ ({
  connected: ['ok', 'connected'],
  needs_reauth: ['danger', 'needs you'],
  unreachable: ['warn', 'unreachable'],
});

/** `2026-01-31 12:00 UTC`, as the pages write times. */
const utc = (/** @type {Date} */ d) => `${d.toISOString().replace('T', ' ').slice(0, 16)} UTC`;

/**
 * What to do after a success, as the element's data-then says.
 * @param {HTMLElement} el
 * @param {ApiResult} result
 */
async function after(el, result) {
  const then = el.dataset.then || 'reload';
  if (then === 'reload') return location.reload();
  if (then.startsWith('go:')) return location.assign(fill(then.slice(3), result.body));
  if (then === 'next') return location.assign(safeNext(new URLSearchParams(location.search).get('next')));
  const b = result.body ?? {};
  // A done state shown in place: the element of that id, with the answer's message; the form (unless the element
  // is in it) or the enclosing [data-hide-when-done] is hidden.
  if (then.startsWith('show:')) {
    const done = document.getElementById(then.slice(5));
    if (!done) return;
    const message = done.querySelector('[data-message]');
    if (message && typeof b.message === 'string') message.textContent = b.message;
    done.hidden = false;
    if (el instanceof HTMLFormElement && !done.closest('form')) el.hidden = true;
    el.closest('[data-hide-when-done]')?.setAttribute('hidden', '');
    return;
  }
  // The OAuth decision: back to the application (its redirect URI), wherever that is.
  if (then === 'redirect') return location.assign(String(b.redirect_to));
  // Connecting an account: on to the connection's start page (then the provider's consent page).
  if (then === 'authorize') return location.assign(String(b.authorize_url));
  if (then === 'reveal')
    return reveal(
      el.dataset.revealTitle || 'Copy it now',
      String(b.key ?? b.token ?? b.secret),
      b.snippets ?? [],
      typeof b.server_id === 'string' ? b.server_id : null,
    );
  if (then === 'sandbox') return showSandbox(/** @type {SandboxSetup} */ (/** @type {unknown} */ (b)));
  if (then === 'try-result' && el instanceof HTMLFormElement) return showTryResult(el, /** @type {TryAnswer} */ (/** @type {unknown} */ (b)));
  if (then === 'verify') {
    const scope = el.closest('[data-verify-scope]');
    const out = scope?.querySelector('[data-verify-result]');
    if (!out) return;
    out.className = `alert small ${b.verified ? 'ok' : 'error'}`;
    out.textContent = b.verified
      ? `Verified: ${b.detail ?? 'the provider accepted these credentials.'}`
      : `Not verified: ${b.error?.message ?? 'the provider refused the credentials'}${b.error?.provider_status ? ` (HTTP ${b.error.provider_status})` : ''}`;
    // The health the check found, as it is stored now.
    const checked = scope?.querySelector('[data-verify-badge]');
    if (checked) checked.textContent = `checked ${utc(new Date())}`;
    const state = scope?.querySelector('[data-state-badge] .badge');
    const look = STATE_BADGES[String(b.state)];
    if (state && look) {
      state.className = `badge ${look[0]}`;
      state.textContent = look[1];
    }
  }
}

/**
 * @param {HTMLElement} el a form (its submit button is marked) or a button
 * @param {boolean} on
 */
function busy(el, on) {
  const button = el.tagName === 'FORM' ? el.querySelector('[type="submit"]') : el;
  if (!button) return;
  button.toggleAttribute('disabled', on);
  button.setAttribute('aria-busy', String(on));
}

/**
 * `"POST /api/x"` -> `["POST", "/api/x"]`.
 * @param {string} spec
 */
function splitApi(spec) {
  const [method, ...rest] = spec.split(' ');
  return [method, rest.join(' ')];
}

document.addEventListener('submit', async (event) => {
  const form = eventElement(event)?.closest('form[data-api]');
  if (!(form instanceof HTMLFormElement)) return;
  event.preventDefault();
  clearErrors(form);
  const { body, problems } = formBody(form);
  if (problems.length) return showProblems(form, problems);
  if (form.dataset.confirm && !(await confirmDialog(form.dataset.confirm, form.dataset.confirmLabel))) return;
  busy(form, true);
  const [method, template] = splitApi(form.dataset.api ?? '');
  // A {field} in the path takes that field's value out of the body (e.g. the server a key is linked to).
  const path = template.replace(/\{(\w+)\}/g, (_, k) => {
    const v = body[k];
    delete body[k];
    return encodeURIComponent(v ?? '');
  });
  const result = await callApi(method, path, body);
  busy(form, false);
  if (!result.ok) return showApiError(form, result.body?.message ?? `The request failed (HTTP ${result.status})`);
  await after(form, result);
});

document.addEventListener('click', async (event) => {
  const target = eventElement(event)?.closest('button, a');
  if (!(target instanceof HTMLElement)) return;
  if (target.hasAttribute('data-menu')) return toggleMenu(target);
  if (target.dataset.open) {
    const dialog = document.getElementById(target.dataset.open);
    if (!(dialog instanceof HTMLDialogElement)) return;
    dialog.showModal();
    dialog.querySelector(/** @type {'input'} */ ('input:not([type=hidden]), select, textarea'))?.focus();
    return;
  }
  if (target instanceof HTMLAnchorElement && target.dataset.dialogPart) {
    event.preventDefault();
    return openPart(target);
  }
  if (target.hasAttribute('data-close')) return target.closest('dialog')?.close();
  if (target.dataset.copy !== undefined) return copy(target);
  if (target.getAttribute('role') === 'tab') return selectTab(target);
  if (target.dataset.api && target.tagName === 'BUTTON') {
    event.preventDefault();
    if (target.dataset.confirm && !(await confirmDialog(target.dataset.confirm, target.dataset.confirmLabel))) return;
    busy(target, true);
    const [method, path] = splitApi(target.dataset.api);
    const result = await callApi(method, path, target.dataset.body ? JSON.parse(target.dataset.body) : undefined);
    busy(target, false);
    if (!result.ok) return alertDialog(result.body?.message ?? `The request failed (HTTP ${result.status})`);
    await after(target, result);
  }
});

/** @param {HTMLElement} button */
async function copy(button) {
  const source = button.dataset.copy ? document.getElementById(button.dataset.copy) : button.previousElementSibling;
  const text = source?.textContent ?? '';
  const label = button.textContent;
  try {
    await navigator.clipboard.writeText(text);
    button.textContent = 'Copied';
  } catch {
    const selection = getSelection();
    if (source && selection) {
      const range = document.createRange();
      range.selectNodeContents(source);
      selection.removeAllRanges();
      selection.addRange(range);
    }
    button.textContent = 'Press Ctrl+C';
  }
  setTimeout(() => (button.textContent = label), 1600);
}

/** @param {HTMLElement} tab */
function selectTab(tab) {
  for (const t of tabsBeside(tab)) {
    const selected = t === tab;
    t.setAttribute('aria-selected', String(selected));
    t.tabIndex = selected ? 0 : -1;
    const panel = document.getElementById(t.getAttribute('aria-controls') ?? '');
    if (panel) panel.hidden = !selected;
  }
}

/**
 * The tabs of a tab's list, in order.
 * @param {Element} tab
 * @returns {HTMLElement[]}
 */
const tabsBeside = (tab) => [...(tab.closest('[role="tablist"]')?.querySelectorAll('[role="tab"]') ?? [])].filter((t) => t instanceof HTMLElement);

document.addEventListener('keydown', (event) => {
  const at = eventElement(event);
  if (event.key === 'Escape') {
    const open = document.querySelector('[data-menu][aria-expanded="true"]');
    if (open instanceof HTMLElement && !document.querySelector('dialog[open]')) {
      toggleMenu(open, false);
      open.focus();
    }
  }
  const bar = at?.closest('.chart .bar');
  if (bar instanceof SVGElement) return moveInChart(bar, event);
  const tab = at?.closest('[role="tab"]');
  if (!(tab instanceof HTMLElement) || !['ArrowLeft', 'ArrowRight'].includes(event.key)) return;
  const tabs = tabsBeside(tab);
  const next = tabs[(tabs.indexOf(tab) + (event.key === 'ArrowRight' ? 1 : tabs.length - 1)) % tabs.length];
  next.focus();
  selectTab(next);
});

/**
 * The navigation menu of narrow screens: a disclosure button that shows or hides the links.
 * @param {HTMLElement} button
 * @param {boolean} [open]
 */
function toggleMenu(button, open = button.getAttribute('aria-expanded') !== 'true') {
  button.setAttribute('aria-expanded', String(open));
  document.getElementById(button.getAttribute('aria-controls') ?? '')?.classList.toggle('open', open);
}

// Charts: each day's figures in a tip over its bar, on hover and on keyboard focus; the arrow keys, Home and
// End move between days (one tab stop per chart).
/** @param {Element} bar */
function showTip(bar) {
  const chart = bar.closest('.chart');
  const tip = chart?.querySelector('.chart-tip');
  const plot = chart?.querySelector('.plot');
  if (!(tip instanceof HTMLElement) || !(plot instanceof HTMLElement)) return;
  tip.textContent = bar.getAttribute('aria-label') ?? '';
  tip.hidden = false;
  const box = bar.getBoundingClientRect();
  const frame = plot.getBoundingClientRect();
  const top = bar.querySelector('rect:not(.hit)')?.getBoundingClientRect().top ?? box.bottom;
  const left = Math.min(Math.max(box.left + box.width / 2 - frame.left - tip.offsetWidth / 2, 0), frame.width - tip.offsetWidth);
  tip.style.left = `${left}px`;
  tip.style.top = `${Math.max(top - frame.top - tip.offsetHeight - 6, 0)}px`;
}
/** @param {Element} bar */
function hideTip(bar) {
  const tip = bar.closest('.chart')?.querySelector('.chart-tip');
  if (tip instanceof HTMLElement) tip.hidden = true;
}
document.addEventListener('mouseover', (event) => {
  const bar = eventElement(event)?.closest('.chart .bar');
  if (bar) showTip(bar);
});
document.addEventListener('mouseout', (event) => {
  const bar = eventElement(event)?.closest('.chart .bar');
  if (bar && !(event instanceof MouseEvent && event.relatedTarget instanceof Element && bar.contains(event.relatedTarget))) hideTip(bar);
});
document.addEventListener('focusin', (event) => {
  const bar = eventElement(event)?.closest('.chart .bar');
  if (bar) showTip(bar);
});
document.addEventListener('focusout', (event) => {
  const bar = eventElement(event)?.closest('.chart .bar');
  if (bar) hideTip(bar);
});
/**
 * @param {SVGElement} bar
 * @param {KeyboardEvent} event
 */
function moveInChart(bar, event) {
  const bars = [...(bar.closest('svg')?.querySelectorAll('.bar') ?? [])].filter((b) => b instanceof SVGElement);
  const i = bars.indexOf(bar);
  const to = { ArrowRight: i + 1, ArrowLeft: i - 1, Home: 0, End: bars.length - 1 }[event.key];
  if (to === undefined || !bars[to]) return;
  event.preventDefault();
  for (const b of bars) b.setAttribute('tabindex', b === bars[to] ? '0' : '-1');
  bars[to].focus();
}

/**
 * Sets the text of the element of a dialog that `selector` finds.
 * @param {HTMLElement} dialog
 * @param {string} selector
 * @param {string} text
 */
function setText(dialog, selector, text) {
  const el = dialog.querySelector(selector);
  if (el) el.textContent = text;
}

/**
 * The layout's confirmation dialog; resolves true when the person confirms.
 * @param {string} message
 * @returns {Promise<boolean>}
 */
function confirmDialog(message, label = 'Confirm') {
  const dialog = required('confirm-dialog', HTMLDialogElement);
  setText(dialog, '[data-message]', message);
  setText(dialog, '[data-confirm-button]', label);
  dialog.returnValue = '';
  dialog.showModal();
  return new Promise((resolve) => dialog.addEventListener('close', () => resolve(dialog.returnValue === 'yes'), { once: true }));
}

/** @param {string} message */
function alertDialog(message) {
  const dialog = required('alert-dialog', HTMLDialogElement);
  setText(dialog, '[data-message]', message);
  dialog.showModal();
}

/**
 * An element with attributes and text (never HTML: values from the API are text).
 * @param {string} tag
 * @param {Record<string, string>} [attributes]
 * @param {string} [text]
 */
function element(tag, attributes = {}, text) {
  const el = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) el.setAttribute(name, value);
  if (text !== undefined) el.textContent = text;
  return el;
}

/**
 * Client commands as tabs, each with its copy button ("Copy the Claude Code command").
 * @param {Element} tabs the tab list
 * @param {Element} panels where the panels go
 * @param {Snippet[]} snippets
 * @param {string} prefix ids of this set
 */
function renderSnippets(tabs, panels, snippets, prefix) {
  tabs.replaceChildren();
  panels.replaceChildren();
  snippets.forEach((snippet, i) => {
    const first = i === 0;
    const ids = { tab: `${prefix}-tab-${snippet.id}`, panel: `${prefix}-panel-${snippet.id}`, code: `${prefix}-snippet-${snippet.id}` };
    tabs.append(
      element(
        'button',
        { type: 'button', role: 'tab', id: ids.tab, 'aria-controls': ids.panel, 'aria-selected': String(first), tabindex: first ? '0' : '-1' },
        snippet.client,
      ),
    );
    const panel = element('div', { role: 'tabpanel', id: ids.panel, 'aria-labelledby': ids.tab });
    panel.hidden = !first;
    // The copy button sits beside the words, not over the command's end.
    const head = element('div', { class: 'snippet-head' });
    head.append(
      element('p', { class: 'small muted' }, snippet.where),
      element('button', { type: 'button', class: 'btn small', 'data-copy': ids.code, 'aria-label': `Copy the ${snippet.client} command` }, 'Copy'),
    );
    // A long command scrolls in its box, which the keyboard can reach.
    const code = element('div', { class: 'code', tabindex: '0', role: 'region', 'aria-label': `${snippet.client} command` });
    code.append(element('pre', { id: ids.code }, snippet.code));
    panel.append(head, code);
    panels.append(panel);
  });
}

/**
 * Shows a new secret exactly once, with client commands containing it when it is a server's key. Closing the
 * dialog reloads the page (the value is gone) — except on that server's page, whose client set-up keeps the
 * key until the person leaves the page, while its list of keys is brought up to date.
 * @param {string} title
 * @param {string} value
 * @param {Snippet[]} snippets
 * @param {string | null} serverId the key's server, for a server key
 */
function reveal(title, value, snippets, serverId) {
  document.querySelectorAll('dialog[open]').forEach((d) => d instanceof HTMLDialogElement && d.close());
  const dialog = required('reveal-dialog', HTMLDialogElement);
  setText(dialog, '[data-title]', title);
  setText(dialog, '#reveal-value', value);
  const connect = dialog.querySelector('[data-reveal-connect]');
  const tabs = dialog.querySelector('[data-snippet-tabs]');
  const panels = dialog.querySelector('[data-snippet-panels]');
  if (connect instanceof HTMLElement && tabs && panels) {
    connect.hidden = snippets.length === 0;
    renderSnippets(tabs, panels, snippets, 'reveal');
  }
  const setUp = document.querySelector('[data-connect-snippets]');
  const keepsKey = setUp instanceof HTMLElement && serverId !== null && setUp.dataset.server === serverId;
  dialog.addEventListener(
    'close',
    () => {
      setText(dialog, '#reveal-value', '');
      tabs?.replaceChildren();
      panels?.replaceChildren();
      if (keepsKey) return withKey(/** @type {HTMLElement} */ (setUp), value);
      location.reload();
    },
    { once: true },
  );
  dialog.showModal();
}

/**
 * The server page's client set-up with the new key in its commands; then the page's parts that list keys are
 * fetched again (the new key appears) without a reload, which would take the key away.
 * @param {HTMLElement} setUp
 * @param {string} key
 */
async function withKey(setUp, key) {
  for (const pre of setUp.querySelectorAll('pre')) if (pre.textContent) pre.textContent = pre.textContent.replaceAll(KEY_PLACEHOLDER, key);
  const note = setUp.querySelector('[data-key-note]');
  if (note) note.textContent = 'These commands contain your new key until you leave this page: copy one now.';
  setUp.classList.add('has-key');
  const res = await fetch(location.href, { headers: { accept: 'text/html' }, credentials: 'same-origin' });
  if (!res.ok) return location.reload();
  const fresh = new DOMParser().parseFromString(await res.text(), 'text/html');
  for (const part of document.querySelectorAll('[data-refresh]')) {
    const replacement = part.id ? fresh.getElementById(part.id) : null;
    if (replacement) part.replaceWith(document.importNode(replacement, true));
  }
  document.querySelectorAll('form').forEach((form) => form.querySelector('[data-server-select]') && showChosenServer(form));
  const heading = document.querySelector('[data-refresh] h2');
  if (heading instanceof HTMLElement) {
    heading.tabIndex = -1;
    heading.focus();
  }
}

/**
 * The sandbox, set up: its key shown once and each client's command with it; closing the dialog reloads the page.
 * @param {SandboxSetup} setup
 */
function showSandbox(setup) {
  const dialog = document.getElementById('sandbox-dialog');
  if (!(dialog instanceof HTMLDialogElement)) return;
  const providers = new Intl.ListFormat('en', { type: 'conjunction' }).format(setup.accounts.map((a) => a.name.replace(/^Sandbox /, '')));
  setText(
    dialog,
    '[data-summary]',
    `Sandbox accounts of ${providers} and the server “${setup.server.name}” with ${setup.tools} tools bound to them, at ${setup.server.url}.`,
  );
  setText(dialog, '#sandbox-key', setup.key.key);
  const tabs = dialog.querySelector('[data-snippet-tabs]');
  const panels = dialog.querySelector('[data-snippet-panels]');
  if (!tabs || !panels) return;
  renderSnippets(tabs, panels, setup.snippets, 'sandbox');
  for (const link of dialog.querySelectorAll('a[data-server-link]'))
    if (link instanceof HTMLAnchorElement) link.href = `/servers/${encodeURIComponent(setup.server.id)}`;
  dialog.addEventListener('close', () => location.reload(), { once: true });
  dialog.showModal();
}

/**
 * A part of another page (a tool's "Try" or its settings) in the page's dialog: fetched, shown, its first field
 * focused. Without JavaScript the link goes to that page.
 * @param {HTMLAnchorElement} link
 */
async function openPart(link) {
  const dialog = document.getElementById(link.dataset.dialog ?? '');
  if (!(dialog instanceof HTMLDialogElement)) return location.assign(link.href);
  busy(link, true);
  const res = await fetch(link.href, { headers: { accept: 'text/html' }, credentials: 'same-origin' });
  busy(link, false);
  if (!res.ok) return location.assign(link.href);
  const page = new DOMParser().parseFromString(await res.text(), 'text/html');
  const part = page.querySelector(`[data-part="${CSS.escape(link.dataset.dialogPart ?? '')}"]`);
  if (!part) return location.assign(link.href);
  const body = dialog.querySelector('[data-dialog-body]') ?? dialog;
  body.replaceChildren(document.importNode(part, true));
  const heading = body.querySelector('h2[id]');
  if (heading) dialog.setAttribute('aria-labelledby', heading.id);
  dialog.showModal();
  body.querySelector(/** @type {'input'} */ ('input:not([type=hidden]), select, textarea'))?.focus();
}

/**
 * A tool's answer as its client gets it: isError, the text content, structuredContent; arguments it refused
 * are also said next to their fields.
 * @param {HTMLFormElement} form
 * @param {TryAnswer} answer
 */
function showTryResult(form, answer) {
  const out = form.querySelector('[data-try-result]');
  if (!(out instanceof HTMLElement)) return;
  const { result } = answer;
  const error = /** @type {{ error?: { code?: string, message?: string, provider_status?: number | null } } | undefined} */ (result.structuredContent)?.error;
  const text = result.content
    .filter((c) => c.type === 'text')
    .map((c) => c.text ?? '')
    .join('\n');
  const head = element('p', { class: `alert ${result.isError ? 'error' : 'ok'}` });
  head.append(
    element('strong', {}, result.isError ? `isError: true${error?.code ? ` · ${error.code}` : ''}` : 'isError: false'),
    document.createTextNode(
      result.isError
        ? ` ${error?.message ?? text}${error?.provider_status ? ` (provider answered HTTP ${error.provider_status})` : ''}`
        : ` The call succeeded. Balance: ${answer.balance.toLocaleString('en-US')} credits.`,
    ),
  );
  // Each answer scrolls in its box, which the keyboard can reach.
  const block = (/** @type {string} */ label, /** @type {string} */ text) =>
    element('pre', { class: 'result-text', tabindex: '0', role: 'region', 'aria-label': label }, text);
  const parts = [head, element('h3', {}, 'content[0].text'), block('The text content of the result', text)];
  if (result.structuredContent !== undefined)
    parts.push(element('h3', {}, 'structuredContent'), block('The structured content of the result', JSON.stringify(result.structuredContent, null, 2)));
  out.replaceChildren(...parts);
  out.hidden = false;
  if (error?.code === 'invalid_arguments' && error.message) showApiError(form, error.message);
  out.scrollIntoView({ block: 'nearest' });
}

// Links in e-mails and invitations carry their one-time token in the fragment (never sent to a server log).
for (const input of document.querySelectorAll('input[data-from-fragment]')) {
  if (input instanceof HTMLInputElement) input.value = location.hash.slice(1);
}
// A page that exists to post its link's token (address verification) does so at once.
for (const form of document.querySelectorAll('form[data-autosubmit]')) {
  if (form instanceof HTMLFormElement) form.requestSubmit();
}

// A provider's code and state came back in this page's address: it is of no use any more, and leaves the
// address bar and the history.
if (location.pathname === '/connect/callback') history.replaceState(null, '', location.pathname);
