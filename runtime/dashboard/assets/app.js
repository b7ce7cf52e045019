// @ts-check
// The dashboard's behaviour: forms and buttons call the management API (/api/...) with the session's CSRF
// token, show the API's own error next to the field it names, confirm destructive actions, reveal a new
// key once (with the sandbox's client commands), copy to the clipboard and switch tabs. Plain ES module; no
// inline handlers (CSP forbids them). Type-checked by `npm run typecheck` (JSDoc types; tsconfig beside this file).

/**
 * An API answer's JSON, as far as this module reads it.
 * @typedef {{ message?: string, key?: string, token?: string, redirect_to?: string, verified?: boolean, detail?: string,
 *   error?: { message?: string, provider_status?: number } } & Record<string, unknown>} ApiBody
 */
/** @typedef {{ ok: boolean, status: number, body: ApiBody | null, headers?: Headers }} ApiResult */
/** @typedef {HTMLInputElement | HTMLSelectElement | HTMLTextAreaElement} Control */
/**
 * The answer of POST /api/sandbox, as the dialog shows it.
 * @typedef {{ accounts: Array<{ name: string }>, server: { id: string, name: string, url: string }, tools: number,
 *   key: { key: string }, snippets: Array<{ id: string, client: string, where: string, code: string }> }} SandboxSetup
 */

const csrf = document.querySelector('meta[name="csrf-token"]')?.getAttribute('content') ?? '';

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

class FieldProblem extends Error {
  /**
   * @param {Control} control
   * @param {string} message
   */
  constructor(control, message) {
    super(message);
    this.control = control;
  }
}

/**
 * The JSON body of a form, typed by each control's data-type; empty controls are left out.
 * @param {HTMLFormElement} form
 * @returns {Record<string, any>}
 */
function formBody(form) {
  /** @type {Record<string, any>} */
  const body = {};
  for (const el of form.elements) {
    if (!(el instanceof HTMLInputElement || el instanceof HTMLSelectElement || el instanceof HTMLTextAreaElement)) continue;
    // :disabled also covers controls inside a disabled fieldset (the tools of a server not chosen).
    if (!el.name || el.matches(':disabled') || el.type === 'submit' || el.type === 'button') continue;
    const required = el.dataset.requires ? form.querySelector(`[name="${el.dataset.requires}"]`) : null;
    if (el.dataset.requires && !(required instanceof HTMLInputElement && required.value.trim())) continue;
    if (el instanceof HTMLInputElement && el.type === 'radio' && !el.checked) continue;
    if (el instanceof HTMLInputElement && el.type === 'checkbox') {
      if (el.dataset.type === 'list') {
        const list = (body[el.name] ??= []);
        if (el.checked) list.push(el.value);
      } else setPath(body, el.name, el.checked);
      continue;
    }
    const text = el.value.trim();
    if (text === '') continue;
    if (el.dataset.pattern && !new RegExp(el.dataset.pattern, 'u').test(text))
      throw new FieldProblem(el, el.dataset.patternMessage || 'This value has the wrong form');
    /** @type {unknown} */
    let value = text;
    switch (el.dataset.type) {
      case 'number':
      case 'integer':
        value = Number(text);
        if (!Number.isFinite(value) || (el.dataset.type === 'integer' && !Number.isInteger(value)))
          throw new FieldProblem(el, `Enter ${el.dataset.type === 'integer' ? 'a whole number' : 'a number'}`);
        break;
      case 'boolean':
        value = text === 'true';
        break;
      case 'day-end':
        // A day ends at 23:59:59 UTC; an unchanged day keeps the exact time it had.
        value = el.dataset.exact && el instanceof HTMLInputElement && text === el.defaultValue ? el.dataset.exact : `${text}T23:59:59Z`;
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
          throw new FieldProblem(el, `Not valid JSON: ${err instanceof Error ? err.message : String(err)}`);
        }
        break;
      default:
        value = el.type === 'password' ? el.value : text;
    }
    setPath(body, el.name, value);
  }
  for (const [name, list] of Object.entries(body))
    if (Array.isArray(list) && list.length === 0 && form.querySelector(`[name="${name}"][data-type="list"]`)) delete body[name];
  if (form.hasAttribute('data-restrictions')) restrictionsOf(form, body);
  return body;
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
 * @param {Element} control
 * @param {string} message
 */
function showFieldError(control, message) {
  control.setAttribute('aria-invalid', 'true');
  const slot = document.getElementById(`${control.id}-error`);
  if (slot) slot.textContent = message;
}

/**
 * Puts the API's message next to every field it names ("name", "defaults" ... "project_key"), else on top.
 * @param {HTMLFormElement} form
 * @param {string} message
 */
function showApiError(form, message) {
  let placed = false;
  for (const [, key] of message.matchAll(/"([^"]+)"/g)) {
    const control = form.querySelector(`[data-key="${CSS.escape(key)}"]`);
    if (!(control instanceof HTMLElement)) continue;
    if (control) {
      showFieldError(control, message);
      if (!placed) control.focus();
      placed = true;
    }
  }
  const top = form.querySelector('.form-error');
  if (top && !placed) top.textContent = message;
  else if (!top && !placed) alertDialog(message);
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
  // The OAuth decision: back to the application (its redirect URI), wherever that is.
  if (then === 'redirect') return location.assign(String(b.redirect_to));
  if (then === 'reveal') return reveal(el.dataset.revealTitle || 'Copy it now', String(b.key ?? b.token));
  if (then === 'sandbox') return showSandbox(/** @type {SandboxSetup} */ (/** @type {unknown} */ (b)));
  if (then === 'verify') {
    const out = el.closest('[data-verify-scope]')?.querySelector('[data-verify-result]');
    if (!out) return;
    out.className = `alert ${b.verified ? 'ok' : 'error'}`;
    out.textContent = b.verified
      ? `Verified: ${b.detail ?? 'the provider accepted these credentials.'}`
      : `Not verified: ${b.error?.message ?? 'the provider refused the credentials'}${b.error?.provider_status ? ` (HTTP ${b.error.provider_status})` : ''}`;
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
  let body;
  try {
    body = formBody(form);
  } catch (err) {
    if (err instanceof FieldProblem) {
      showFieldError(err.control, err.message);
      err.control.focus();
      return;
    }
    throw err;
  }
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
  if (target.dataset.open) {
    const dialog = document.getElementById(target.dataset.open);
    if (!(dialog instanceof HTMLDialogElement)) return;
    dialog.showModal();
    dialog.querySelector(/** @type {'input'} */ ('input:not([type=hidden]), select, textarea'))?.focus();
    return;
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
  const tab = eventElement(event)?.closest('[role="tab"]');
  if (!(tab instanceof HTMLElement) || !['ArrowLeft', 'ArrowRight'].includes(event.key)) return;
  const tabs = tabsBeside(tab);
  const next = tabs[(tabs.indexOf(tab) + (event.key === 'ArrowRight' ? 1 : tabs.length - 1)) % tabs.length];
  next.focus();
  selectTab(next);
});

/**
 * Sets the text of the element of a dialog that `selector` finds.
 * @param {HTMLDialogElement} dialog
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
 * Shows a new secret exactly once; closing the dialog reloads the page, and the value is gone.
 * @param {string} title
 * @param {string} value
 */
function reveal(title, value) {
  document.querySelectorAll('dialog[open]').forEach((d) => d instanceof HTMLDialogElement && d.close());
  const dialog = required('reveal-dialog', HTMLDialogElement);
  setText(dialog, '[data-title]', title);
  setText(dialog, '#reveal-value', value);
  dialog.addEventListener('close', () => location.reload(), { once: true });
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
  tabs.replaceChildren();
  panels.replaceChildren();
  setup.snippets.forEach((snippet, i) => {
    const first = i === 0;
    const ids = { tab: `sandbox-tab-${snippet.id}`, panel: `sandbox-panel-${snippet.id}`, code: `sandbox-snippet-${snippet.id}` };
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
    const code = element('div', { class: 'code' });
    code.append(element('pre', { id: ids.code }, snippet.code));
    panel.append(head, code);
    panels.append(panel);
  });
  for (const link of dialog.querySelectorAll('a[data-server-link]'))
    if (link instanceof HTMLAnchorElement) link.href = `/servers/${encodeURIComponent(setup.server.id)}`;
  dialog.addEventListener('close', () => location.reload(), { once: true });
  dialog.showModal();
}

// Invitation links carry their one-time token in the fragment (never sent to a server log).
const inviteToken = document.getElementById('invite-token');
if (inviteToken instanceof HTMLInputElement) inviteToken.value = location.hash.slice(1);
