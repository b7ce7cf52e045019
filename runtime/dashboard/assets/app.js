// The dashboard's behaviour: forms and buttons call the management API (/api/...) with the session's CSRF
// token, show the API's own error next to the field it names, confirm destructive actions, reveal a new
// key once (with the sandbox's client commands), copy to the clipboard and switch tabs. Plain ES module; no
// inline handlers (CSP forbids them).
const csrf = document.querySelector('meta[name="csrf-token"]')?.content ?? '';

async function callApi(method, path, body) {
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

/** Sets `value` at a dotted path of `target`. */
function setPath(target, path, value) {
  const parts = path.split('.');
  let o = target;
  for (const p of parts.slice(0, -1)) o = o[p] ??= {};
  o[parts.at(-1)] = value;
}

class FieldProblem extends Error {
  constructor(control, message) {
    super(message);
    this.control = control;
  }
}

/** The JSON body of a form, typed by each control's data-type; empty controls are left out. */
function formBody(form) {
  const body = {};
  for (const el of form.elements) {
    if (!el.name || el.disabled || el.type === 'submit' || el.type === 'button') continue;
    if (el.type === 'radio' && !el.checked) continue;
    if (el.type === 'checkbox') {
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
          throw new FieldProblem(el, `Not valid JSON: ${err.message}`);
        }
        break;
      default:
        value = el.type === 'password' ? el.value : text;
    }
    setPath(body, el.name, value);
  }
  for (const [name, list] of Object.entries(body))
    if (Array.isArray(list) && list.length === 0 && form.querySelector(`[name="${name}"][data-type="list"]`)) delete body[name];
  return body;
}

function clearErrors(form) {
  form.querySelectorAll('[aria-invalid="true"]').forEach((el) => el.removeAttribute('aria-invalid'));
  form.querySelectorAll('.field-error').forEach((el) => (el.textContent = ''));
  const top = form.querySelector('.form-error');
  if (top) top.textContent = '';
}

function showFieldError(control, message) {
  control.setAttribute('aria-invalid', 'true');
  const slot = document.getElementById(`${control.id}-error`);
  if (slot) slot.textContent = message;
}

/** Puts the API's message next to every field it names ("name", "defaults" ... "project_key"), else on top. */
function showApiError(form, message) {
  let placed = false;
  for (const [, key] of message.matchAll(/"([^"]+)"/g)) {
    const control = form.querySelector(`[data-key="${CSS.escape(key)}"]`);
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

const fill = (template, data) => template.replace(/\{(\w+)\}/g, (_, k) => encodeURIComponent(data?.[k] ?? ''));

/** What to do after a success, as the element's data-then says. */
async function after(el, result) {
  const then = el.dataset.then || 'reload';
  if (then === 'reload') return location.reload();
  if (then.startsWith('go:')) return location.assign(fill(then.slice(3), result.body));
  if (then === 'next') return location.assign(safeNext(new URLSearchParams(location.search).get('next')));
  // The OAuth decision: back to the application (its redirect URI), wherever that is.
  if (then === 'redirect') return location.assign(result.body.redirect_to);
  if (then === 'reveal') return reveal(el.dataset.revealTitle || 'Copy it now', result.body.key ?? result.body.token);
  if (then === 'sandbox') return showSandbox(result.body);
  if (then === 'verify') {
    const out = el.closest('[data-verify-scope]')?.querySelector('[data-verify-result]');
    const b = result.body;
    out.className = `alert ${b.verified ? 'ok' : 'error'}`;
    out.textContent = b.verified
      ? `Verified: ${b.detail ?? 'the provider accepted these credentials.'}`
      : `Not verified: ${b.error?.message ?? 'the provider refused the credentials'}${b.error?.provider_status ? ` (HTTP ${b.error.provider_status})` : ''}`;
  }
}

function busy(el, on) {
  const button = el.tagName === 'FORM' ? el.querySelector('[type="submit"]') : el;
  if (!button) return;
  button.toggleAttribute('disabled', on);
  button.setAttribute('aria-busy', String(on));
}

function splitApi(spec) {
  const [method, ...rest] = spec.split(' ');
  return [method, rest.join(' ')];
}

document.addEventListener('submit', async (event) => {
  const form = event.target.closest('form[data-api]');
  if (!form) return;
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
  const [method, template] = splitApi(form.dataset.api);
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
  const target = event.target.closest('button, a');
  if (!target) return;
  if (target.dataset.open) {
    const dialog = document.getElementById(target.dataset.open);
    dialog?.showModal();
    dialog?.querySelector('input:not([type=hidden]), select, textarea')?.focus();
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

async function copy(button) {
  const source = button.dataset.copy ? document.getElementById(button.dataset.copy) : button.previousElementSibling;
  const text = source?.textContent ?? '';
  const label = button.textContent;
  try {
    await navigator.clipboard.writeText(text);
    button.textContent = 'Copied';
  } catch {
    const range = document.createRange();
    range.selectNodeContents(source);
    getSelection().removeAllRanges();
    getSelection().addRange(range);
    button.textContent = 'Press Ctrl+C';
  }
  setTimeout(() => (button.textContent = label), 1600);
}

function selectTab(tab) {
  const list = tab.closest('[role="tablist"]');
  for (const t of list.querySelectorAll('[role="tab"]')) {
    const selected = t === tab;
    t.setAttribute('aria-selected', String(selected));
    t.tabIndex = selected ? 0 : -1;
    document.getElementById(t.getAttribute('aria-controls')).hidden = !selected;
  }
}

document.addEventListener('keydown', (event) => {
  const tab = event.target.closest?.('[role="tab"]');
  if (!tab || !['ArrowLeft', 'ArrowRight'].includes(event.key)) return;
  const tabs = [...tab.closest('[role="tablist"]').querySelectorAll('[role="tab"]')];
  const next = tabs[(tabs.indexOf(tab) + (event.key === 'ArrowRight' ? 1 : tabs.length - 1)) % tabs.length];
  next.focus();
  selectTab(next);
});

/** The layout's confirmation dialog; resolves true when the person confirms. */
function confirmDialog(message, label = 'Confirm') {
  const dialog = document.getElementById('confirm-dialog');
  dialog.querySelector('[data-message]').textContent = message;
  dialog.querySelector('[data-confirm-button]').textContent = label;
  dialog.returnValue = '';
  dialog.showModal();
  return new Promise((resolve) => dialog.addEventListener('close', () => resolve(dialog.returnValue === 'yes'), { once: true }));
}

function alertDialog(message) {
  const dialog = document.getElementById('alert-dialog');
  dialog.querySelector('[data-message]').textContent = message;
  dialog.showModal();
}

/** Shows a new secret exactly once; closing the dialog reloads the page, and the value is gone. */
function reveal(title, value) {
  document.querySelectorAll('dialog[open]').forEach((d) => d.close());
  const dialog = document.getElementById('reveal-dialog');
  dialog.querySelector('[data-title]').textContent = title;
  dialog.querySelector('#reveal-value').textContent = value;
  dialog.addEventListener('close', () => location.reload(), { once: true });
  dialog.showModal();
}

/** An element with attributes and text (never HTML: values from the API are text). */
function element(tag, attributes = {}, text) {
  const el = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) el.setAttribute(name, value);
  if (text !== undefined) el.textContent = text;
  return el;
}

/** The sandbox, set up: its key shown once and each client's command with it; closing the dialog reloads the page. */
function showSandbox(setup) {
  const dialog = document.getElementById('sandbox-dialog');
  const providers = new Intl.ListFormat('en', { type: 'conjunction' }).format(setup.accounts.map((a) => a.name.replace(/^Sandbox /, '')));
  dialog.querySelector('[data-summary]').textContent =
    `Sandbox accounts of ${providers} and the server “${setup.server.name}” with ${setup.tools} tools bound to them, at ${setup.server.url}.`;
  dialog.querySelector('#sandbox-key').textContent = setup.key.key;
  const tabs = dialog.querySelector('[data-snippet-tabs]');
  const panels = dialog.querySelector('[data-snippet-panels]');
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
  for (const link of dialog.querySelectorAll('[data-server-link]')) link.href = `/servers/${encodeURIComponent(setup.server.id)}`;
  dialog.addEventListener('close', () => location.reload(), { once: true });
  dialog.showModal();
}

// Invitation links carry their one-time token in the fragment (never sent to a server log).
const inviteToken = document.getElementById('invite-token');
if (inviteToken) inviteToken.value = location.hash.slice(1);
