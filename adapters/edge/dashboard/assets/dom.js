// Tiny DOM helpers for the console's pages.
//
// The one rule: data never becomes markup. Every string goes into the
// page as a text node or an attribute value (textContent, setAttribute),
// never through innerHTML, insertAdjacentHTML or document.write, so a
// message text, a chat name, a cron header or a webhook response
// excerpt always shows as the characters it is.

/**
 * h builds an element: h('p', {class: 'hint'}, 'text', child, [more]).
 *
 * props (optional, may be null):
 *   class           the class attribute (string)
 *   text            the textContent
 *   on<Event>       a listener, e.g. onclick, onsubmit, oninput
 *   dataset         {key: value} for data-* attributes
 *   href, src       checked by safeURL: only http(s), mailto and same-site
 *   value, checked, disabled, hidden, selected, required, readOnly,
 *   multiple        set as properties
 *   anything else   setAttribute(name, value); false, null or undefined
 *                   leave it out, true sets it empty
 * children: strings and numbers (as text), nodes, arrays of them; null,
 * undefined and false are skipped.
 */
export function h(tag, props, ...children) {
  const el = document.createElement(tag);
  if (props) {
    for (const [name, value] of Object.entries(props)) {
      setProp(el, name, value);
    }
  }
  append(el, children);
  return el;
}

const properties = new Set(['value', 'checked', 'disabled', 'hidden', 'selected', 'required', 'readOnly', 'multiple', 'indeterminate']);

function setProp(el, name, value) {
  if (name === 'class') {
    if (value) el.className = Array.isArray(value) ? value.filter(Boolean).join(' ') : value;
  } else if (name === 'text') {
    el.textContent = value == null ? '' : String(value);
  } else if (name === 'dataset') {
    for (const [k, v] of Object.entries(value || {})) {
      if (v != null) el.dataset[k] = String(v);
    }
  } else if (name.startsWith('on') && typeof value === 'function') {
    el.addEventListener(name.slice(2).toLowerCase(), value);
  } else if (properties.has(name)) {
    el[name] = name === 'value' ? (value == null ? '' : String(value)) : Boolean(value);
  } else if (name === 'href' || name === 'src' || name === 'action') {
    const safe = safeURL(value);
    if (safe != null) el.setAttribute(name, safe);
  } else if (value === true) {
    el.setAttribute(name, '');
  } else if (value !== false && value != null) {
    el.setAttribute(name, String(value));
  }
}

/** append adds children (text, nodes, nested arrays) to el; returns el. */
export function append(el, ...children) {
  for (const child of [children].flat(Infinity)) {
    if (child == null || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return el;
}

/** mount replaces el's children with children. */
export function mount(el, ...children) {
  el.replaceChildren();
  return append(el, children);
}

/**
 * safeURL returns url when a link to it is harmless (http, https, mailto,
 * or a path of this site), else null: a javascript: or data: URL from
 * the data never becomes a link.
 */
export function safeURL(url) {
  if (url == null) return null;
  const s = String(url).trim();
  if (s === '') return null;
  if (s.startsWith('/') && !s.startsWith('//')) return s;
  try {
    const u = new URL(s, location.href);
    if (['http:', 'https:', 'mailto:'].includes(u.protocol)) return u.href;
  } catch {
    // not a URL
  }
  return null;
}

const dateTime = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'medium' });
const timeOnly = new Intl.DateTimeFormat(undefined, { timeStyle: 'medium' });

/** formatTime shows an RFC 3339 instant in the browser's time zone. */
export function formatTime(iso) {
  if (!iso) return '';
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return String(iso);
  const today = new Date();
  if (d.toDateString() === today.toDateString()) return timeOnly.format(d);
  return dateTime.format(d);
}

/** time is a <time> element for an instant, its full form in the title. */
export function time(iso) {
  if (!iso) return h('span', { class: 'muted' }, '—');
  const d = new Date(iso);
  return h('time', { datetime: iso, title: Number.isNaN(d.getTime()) ? iso : d.toISOString() }, formatTime(iso));
}

/** excerpt shortens text to n characters, with an ellipsis. */
export function excerpt(text, n = 80) {
  const s = text == null ? '' : String(text);
  return s.length > n ? s.slice(0, n - 1) + '…' : s;
}

let ids = 0;
/** uid returns an id unique in the page, for label for= and aria links. */
export function uid(prefix = 'f') {
  ids += 1;
  return `${prefix}-${ids}`;
}

/** loading is a status line shown while data is on its way. */
export function loading(text = 'Loading…') {
  return h('p', { class: 'loading', role: 'status' }, text);
}

/** notice is a message box: kind is info, success, warning or error. */
export function notice(kind, ...children) {
  return h('div', { class: ['notice', `notice-${kind}`], role: kind === 'error' ? 'alert' : 'status' }, children);
}

/**
 * errorBox shows what went wrong (an ApiError's message, with its code),
 * and a "Try again" button when retry is given.
 */
export function errorBox(err, retry) {
  const code = err && err.code ? h('code', null, err.code) : null;
  return notice('error',
    h('p', null, err && err.message ? err.message : String(err)), code && h('p', { class: 'muted' }, 'Code: ', code),
    retry ? button('Try again', retry) : null);
}

/** button is a type=button button; onclick gets the event. */
export function button(label, onclick, props = {}) {
  return h('button', { type: 'button', onclick, ...props }, label);
}

/** badge shows a status word (queued, sent, failed…), styled by its value. */
export function badge(status) {
  const s = String(status || '').toLowerCase();
  return h('span', { class: ['badge', `badge-${s.replace(/[^a-z0-9_-]/g, '')}`] }, s.replace(/_/g, ' '));
}

/**
 * field is a labelled form control: field('Address', h('input', {name:
 * 'address'}), {hint: '5 to 30 characters'}). The control gets an id (if
 * it has none) and aria-describedby for the hint and the error line,
 * which showFieldErrors fills.
 */
export function field(label, control, { hint, class: cls } = {}) {
  if (!control.id) control.id = uid(control.name || 'f');
  const hintEl = hint ? h('p', { class: 'hint', id: control.id + '-hint' }, hint) : null;
  const errEl = h('p', { class: 'field-error', id: control.id + '-error', hidden: true });
  control.setAttribute('aria-describedby', [hintEl && hintEl.id, errEl.id].filter(Boolean).join(' '));
  return h('div', { class: ['field', cls] }, h('label', { for: control.id }, label), control, hintEl, errEl);
}

/**
 * showFieldErrors marks the controls of form named in fields ({name:
 * [messages]} or {name: message}) as invalid with their messages, clears
 * the others, and focuses the first invalid one. Returns whether any
 * field matched.
 */
export function showFieldErrors(form, fields) {
  let first = null;
  for (const control of form.querySelectorAll('[name]')) {
    const errEl = form.querySelector(`#${CSS.escape(control.id + '-error')}`);
    const msgs = fields ? fields[control.name] : null;
    const text = Array.isArray(msgs) ? msgs.join(' ') : msgs;
    if (text) {
      control.setAttribute('aria-invalid', 'true');
      if (errEl) {
        errEl.textContent = text;
        errEl.hidden = false;
      }
      first = first || control;
    } else {
      control.removeAttribute('aria-invalid');
      if (errEl) {
        errEl.textContent = '';
        errEl.hidden = true;
      }
    }
  }
  if (first) first.focus();
  return first != null;
}

/**
 * table is a data table in its own scrolling box; on narrow screens each
 * row becomes a card (the header's label beside each cell, from
 * data-label). columns: [{label, cell: row => node|string, class}].
 */
export function table({ caption, columns, rows, empty = 'Nothing here yet.', rowProps }) {
  if (!rows || rows.length === 0) return h('p', { class: 'empty' }, empty);
  return h('div', { class: 'table-wrap' },
    h('table', { class: 'data' },
      caption ? h('caption', null, caption) : null,
      h('thead', null, h('tr', null, columns.map((c) => h('th', { scope: 'col', class: c.class }, c.label)))),
      h('tbody', null, rows.map((row) => h('tr', rowProps ? rowProps(row) : null,
        columns.map((c) => h('td', { class: c.class, dataset: { label: c.label } }, c.cell(row))))))));
}

/**
 * pager is the navigation of a paged list: "Newer" (back to the previous
 * page, when onPrev is given) and "Older" / next (when hasNext).
 */
export function pager({ onPrev, onNext, hasNext, prevLabel = 'Previous page', nextLabel = 'Next page', status }) {
  return h('nav', { class: 'pager', 'aria-label': 'Pages' },
    button(prevLabel, onPrev, { disabled: !onPrev }),
    status ? h('span', { class: 'pager-status' }, status) : null,
    button(nextLabel, onNext, { disabled: !hasNext }));
}

let liveRegion;
/** announce tells screen readers something happened (politely). */
export function announce(text) {
  if (!liveRegion) {
    liveRegion = h('div', { class: 'visually-hidden', role: 'status', 'aria-live': 'polite' });
    document.body.append(liveRegion);
  }
  liveRegion.textContent = '';
  // A new text node after clearing, so the same words are read again.
  requestAnimationFrame(() => { liveRegion.textContent = text; });
}

/** section is a titled part of a page. */
export function section(title, ...children) {
  const id = uid('s');
  return h('section', { class: 'panel', 'aria-labelledby': id }, h('h2', { id }, title), children);
}
