// The Webhook page: the account's endpoint (URL, event types, enabled),
// its signing secret (shown once, when it is made or rotated), "Send
// test", and the delivery log with every attempt and replay.
//
// Everything comes through GraphQL (webhook, webhookEventTypes,
// webhookDeliveries; updateWebhook, rotateWebhookSecret, testWebhook,
// replayWebhookDelivery), with the session. Receivers' answers are
// shown as text only (dom.js): a response body of <script> stays the
// characters it is.

import { graphql } from './api.js';
import {
  announce, badge, button, errorBox, excerpt, field, h, mount, notice, pager, section, showFieldErrors, table, time, uid,
} from './dom.js';

const PAGE_SIZE = 20;

const WEBHOOK_FIELDS = 'url enabled events disabledReason disabledAt failingSince previousSecretExpiresAt inlineMediaMaxBytes createdAt updatedAt';

const PAGE_QUERY = `query WebhookPage($first: Int, $after: String, $status: WebhookDeliveryStatus) {
  account { historyRetentionDays messageRetentionDays }
  webhook { ${WEBHOOK_FIELDS} }
  webhookEventTypes
  webhookDeliveries(first: $first, after: $after, status: $status) {
    totalCount
    pageInfo { hasNextPage endCursor }
    nodes { id eventType status attempts lastStatusCode lastError nextAttemptAt createdAt log { at statusCode latencyMs error response } }
  }
}`;

const LOG_QUERY = `query WebhookLog($first: Int, $after: String, $status: WebhookDeliveryStatus) {
  webhookDeliveries(first: $first, after: $after, status: $status) {
    totalCount
    pageInfo { hasNextPage endCursor }
    nodes { id eventType status attempts lastStatusCode lastError nextAttemptAt createdAt log { at statusCode latencyMs error response } }
  }
}`;

const UPDATE = `mutation UpdateWebhook($input: WebhookInput!) {
  updateWebhook(input: $input) { secret webhook { ${WEBHOOK_FIELDS} } }
}`;

const ROTATE = `mutation RotateWebhookSecret { rotateWebhookSecret { secret webhook { ${WEBHOOK_FIELDS} } } }`;

const TEST = 'mutation TestWebhook { testWebhook { id status } }';

const REPLAY = 'mutation ReplayWebhookDelivery($id: ID!) { replayWebhookDelivery(id: $id) { id status } }';

const DISABLED_REASONS = {
  gone: 'the receiver answered 410 Gone',
  failing: 'every attempt failed for five days',
  disabled: 'turned off here or through the API',
};

/** days is a retention period in words: "30 days", "1 day", "less than a day". */
function days(n) {
  if (n < 1) return 'less than a day';
  const d = Math.round(n);
  return d === 1 ? '1 day' : `${d} days`;
}

/** render is the page's entry (see router.js). */
export async function render(root, ctx) {
  useStyles();
  const state = {
    webhook: null,
    types: [],
    // The delivery log: its filter, and the cursors of the pages before
    // the one shown (after: null is the first page).
    status: ctx.params.get('status') || '',
    cursors: [],
    after: null,
    log: null,
    logError: null,
    // The secret just made, until the person hides it (never fetched
    // again: the API shows it only in the answer that made it).
    secret: null,
    secretKind: '',
    // Deliveries being watched after a test or replay, until they are
    // done.
    watching: new Set(),
    message: null,
  };
  let stopped = false;
  let timer = null;

  const data = await graphql(PAGE_QUERY, logVariables(state));
  state.webhook = data.webhook;
  state.types = data.webhookEventTypes || [];
  state.log = data.webhookDeliveries;
  // Deliveries carry messages, so they go at the shorter of the history
  // and the message retention (null: messages are kept).
  const history = data.account.historyRetentionDays;
  const messages = data.account.messageRetentionDays;
  const byMessages = messages != null && messages < history;

  const endpointPanel = h('div', { class: 'webhook-endpoint' });
  const secretPanel = h('div', { class: 'webhook-secret-slot' });
  const logPanel = h('div', { class: 'webhook-log' });
  mount(root,
    h('p', { class: 'lead muted' },
      'Switchboard POSTs every event of the account to this URL, signed with the endpoint\'s secret (Standard Webhooks). ',
      'The log below shows each delivery and every attempt, ',
      h('span', { class: 'retention' }, `kept ${days(byMessages ? messages : history)}`),
      byMessages
        ? ` (the account's message retention, shorter than its history retention of ${days(history)}; a delivery still pending stays until it ends). `
        : ' (the account\'s history retention; a delivery still pending stays until it ends). ',
      h('span', { class: 'message-retention' }, messages == null
        ? 'Messages are kept: the account has no message retention.'
        : `Messages are kept ${days(messages)} (the account's message retention).`)),
    secretPanel, endpointPanel, logPanel);

  function paint() {
    paintSecret();
    paintEndpoint();
    paintLog();
  }

  // ---- the secret, shown once --------------------------------------------

  function paintSecret() {
    if (!state.secret) {
      mount(secretPanel);
      return;
    }
    const input = h('input', {
      type: 'text', name: 'signing_secret', value: state.secret, readOnly: true, spellcheck: 'false', autocomplete: 'off', class: 'secret-value',
    });
    const copied = h('span', { class: 'copy-status', role: 'status' });
    const copy = button('Copy', async () => {
      const ok = await copyText(input);
      copied.textContent = ok ? 'Copied.' : 'Select the secret and copy it yourself.';
    }, { class: 'copy-secret' });
    const hide = button('I have stored it — hide', () => {
      state.secret = null;
      paintSecret();
      announce('The secret is hidden; it will not be shown again.');
    }, { class: 'hide-secret' });
    mount(secretPanel, notice('warning',
      h('h2', { class: 'secret-title' }, state.secretKind === 'rotated' ? 'New signing secret' : 'Signing secret'),
      h('p', null, 'Copy it now: it is shown only this once. Your receiver verifies every delivery with it.',
        state.secretKind === 'rotated' ? ' The previous secret keeps signing beside it for 24 hours.' : ''),
      field('Signing secret', input),
      h('div', { class: 'actions' }, copy, hide, copied)));
  }

  // ---- the endpoint ------------------------------------------------------

  function paintEndpoint() {
    const wh = state.webhook;
    const children = [];
    if (state.message) children.push(state.message);
    if (wh) children.push(statusFacts(wh));
    children.push(endpointForm(wh));
    if (wh) children.push(endpointActions(wh));
    mount(endpointPanel, section('Endpoint', children));
  }

  function statusFacts(wh) {
    const state_ = wh.enabled ? badge('enabled') : badge('disabled');
    const facts = [
      h('dt', null, 'Status'), h('dd', { class: 'webhook-status' }, state_,
        !wh.enabled && wh.disabledReason ? h('span', { class: 'muted' }, ' — ', DISABLED_REASONS[wh.disabledReason] || wh.disabledReason) : null,
        !wh.enabled && wh.disabledAt ? h('span', { class: 'muted' }, ' since ', time(wh.disabledAt)) : null),
      h('dt', null, 'URL'), h('dd', null, h('code', { class: 'webhook-url' }, wh.url)),
    ];
    if (wh.failingSince) {
      facts.push(h('dt', null, 'Failing since'), h('dd', { class: 'error' }, time(wh.failingSince)));
    }
    if (wh.previousSecretExpiresAt) {
      facts.push(h('dt', null, 'Previous secret'), h('dd', null, 'signs too until ', time(wh.previousSecretExpiresAt)));
    }
    facts.push(h('dt', null, 'Updated'), h('dd', null, time(wh.updatedAt)));
    return h('dl', { class: 'facts webhook-facts' }, facts);
  }

  function endpointForm(wh) {
    const url = h('input', {
      type: 'url', name: 'url', value: wh ? wh.url : '', required: true, autocomplete: 'url', spellcheck: 'false',
      placeholder: 'https://agent.example.com/hooks', inputmode: 'url',
    });
    const chosen = new Set(wh ? wh.events : []);
    const everything = !wh || wh.events.length === 0;
    const all = h('input', { type: 'checkbox', name: 'all_events', checked: everything, id: uid('all-events') });
    const boxes = state.types.map((t) => h('input', {
      type: 'checkbox', name: 'events', value: t, checked: everything || chosen.has(t), disabled: everything, id: uid('event'),
    }));
    all.addEventListener('change', () => {
      for (const b of boxes) {
        b.disabled = all.checked;
        if (all.checked) b.checked = true;
      }
    });
    const eventsError = h('p', { class: 'field-error', id: uid('events-error'), hidden: true });
    const events = h('fieldset', { class: 'events', 'aria-describedby': eventsError.id },
      h('legend', null, 'Events'),
      h('div', { class: 'check' }, all, h('label', { for: all.id }, 'Every event type, including types added later')),
      h('ul', { class: 'event-list' }, state.types.map((t, i) => h('li', { class: 'check' }, boxes[i], h('label', { for: boxes[i].id }, h('code', null, t))))),
      eventsError);
    const inline = h('input', {
      type: 'number', name: 'inline_media_max_bytes', min: 0, max: 5242880, step: 1, inputmode: 'numeric',
      value: String(wh ? wh.inlineMediaMaxBytes : 0),
    });
    const secret = h('input', {
      type: 'password', name: 'secret', value: '', autocomplete: 'off', spellcheck: 'false', minlength: 24, maxlength: 256,
    });
    const formError = h('div', { class: 'form-error' });
    const submit = h('button', { type: 'submit' }, wh ? 'Save' : 'Create webhook');
    const form = h('form', { class: 'webhook-form', novalidate: true },
      field('Endpoint URL', url, { hint: 'A complete https:// URL including its route (plain http:// only to hosts the server allows as private).' }),
      events,
      field('Inline media up to (bytes)', inline, { hint: 'A photo or file a user sends of at most this size arrives in the payload as base64 data; 0 turns it off, at most 5242880 (5 MB).' }),
      field('Signing secret of your own (optional)', secret, { hint: 'Leave empty to keep the current secret. Receivers that already hold one (an A1Base template: its API secret) verify with it; 24 to 256 characters. The current secret signs beside it for 24 hours.' }),
      formError, h('div', { class: 'actions' }, submit));
    form.addEventListener('submit', async (ev) => {
      ev.preventDefault();
      mount(formError);
      eventsError.hidden = true;
      const input = { url: url.value.trim(), inlineMediaMaxBytes: Number(inline.value || 0) };
      if (secret.value !== '') input.secret = secret.value;
      if (!all.checked) {
        input.events = boxes.filter((b) => b.checked).map((b) => b.value);
        if (input.events.length === 0) {
          eventsError.textContent = 'Choose at least one event type, or every type.';
          eventsError.hidden = false;
          boxes[0]?.focus();
          return;
        }
      } else {
        input.events = [];
      }
      if (wh) input.enabled = wh.enabled;
      submit.disabled = true;
      try {
        const out = (await graphql(UPDATE, { input })).updateWebhook;
        state.webhook = out.webhook;
        if (out.secret) {
          state.secret = out.secret;
          state.secretKind = 'created';
        }
        state.message = notice('success', h('p', null, wh ? 'The webhook is saved.' : 'The webhook is created.'));
        paint();
        announce(wh ? 'The webhook is saved.' : 'The webhook is created. Copy its signing secret now.');
        focusSecret();
      } catch (err) {
        submit.disabled = false;
        const fields = fieldErrors(err);
        const matched = showFieldErrors(form, fields);
        if (fields && fields.events) {
          eventsError.textContent = fields.events.join(' ');
          eventsError.hidden = false;
        }
        if (!matched) mount(formError, errorBox(err));
      }
    });
    return form;
  }

  function endpointActions(wh) {
    const out = h('div', { class: 'actions endpoint-actions' });
    const busy = (b, fn) => async () => {
      b.disabled = true;
      try {
        await fn();
      } catch (err) {
        state.message = errorBox(err);
        paintEndpoint();
      } finally {
        b.disabled = false;
      }
    };
    const toggle = button(wh.enabled ? 'Disable' : 'Enable', null, { class: wh.enabled ? 'danger toggle-enabled' : 'primary toggle-enabled' });
    toggle.addEventListener('click', busy(toggle, async () => {
      const input = { url: wh.url, enabled: !wh.enabled, events: wh.events };
      const res = (await graphql(UPDATE, { input })).updateWebhook;
      state.webhook = res.webhook;
      const words = res.webhook.enabled ? 'The webhook is enabled.' : 'The webhook is disabled: no events are delivered until you enable it.';
      state.message = notice('success', h('p', null, words));
      paintEndpoint();
      announce(words);
    }));
    const test = button('Send test', null, { class: 'send-test', disabled: !wh.enabled, title: wh.enabled ? null : 'Enable the webhook first' });
    test.addEventListener('click', busy(test, async () => {
      const d = (await graphql(TEST)).testWebhook;
      state.message = notice('info', h('p', null, 'A webhook.test event is on its way; its delivery appears in the log below.'));
      paintEndpoint();
      announce('Test delivery queued.');
      watch(d.id);
    }));
    const rotate = button('Rotate secret', null, { class: 'rotate-secret' });
    rotate.addEventListener('click', busy(rotate, async () => {
      const res = (await graphql(ROTATE)).rotateWebhookSecret;
      state.webhook = res.webhook;
      state.secret = res.secret;
      state.secretKind = 'rotated';
      state.message = null;
      paint();
      announce('A new signing secret was made. Copy it now.');
      focusSecret();
    }));
    append(out, toggle, test, rotate);
    return out;
  }

  function focusSecret() {
    const el = secretPanel.querySelector('input.secret-value');
    if (el) {
      el.focus();
      el.select();
    }
  }

  // ---- the delivery log --------------------------------------------------

  function paintLog() {
    const statusSelect = h('select', { name: 'status' },
      [['', 'All'], ['PENDING', 'Pending'], ['SUCCEEDED', 'Succeeded'], ['FAILED', 'Failed']].map(([v, label]) =>
        h('option', { value: v, selected: v === state.status }, label)));
    statusSelect.addEventListener('change', () => {
      state.status = statusSelect.value;
      state.cursors = [];
      state.after = null;
      loadLog();
    });
    const refresh = button('Refresh', () => loadLog(), { class: 'refresh-log' });
    const body = [];
    body.push(h('div', { class: 'toolbar' }, field('Status', statusSelect), refresh));
    if (state.logError) body.push(errorBox(state.logError, () => loadLog()));
    const log = state.log;
    if (log) {
      body.push(deliveryTable(log.nodes));
      const first = state.cursors.length * PAGE_SIZE + 1;
      body.push(pager({
        onPrev: state.cursors.length ? () => {
          state.after = state.cursors.pop();
          loadLog();
        } : null,
        onNext: () => {
          state.cursors.push(state.after);
          state.after = log.pageInfo.endCursor;
          loadLog();
        },
        hasNext: log.pageInfo.hasNextPage,
        prevLabel: 'Newer',
        nextLabel: 'Older',
        status: log.totalCount ? `${first}–${first + log.nodes.length - 1} of ${log.totalCount}` : null,
      }));
    }
    mount(logPanel, section('Delivery log', body));
  }

  function deliveryTable(nodes) {
    return table({
      caption: 'Deliveries, newest first',
      empty: state.webhook ? 'No deliveries yet. Send a test to see one.' : 'No deliveries: set the webhook URL first.',
      rows: nodes,
      rowProps: (d) => ({ class: 'delivery', dataset: { id: d.id, status: d.status.toLowerCase() } }),
      columns: [
        { label: 'Event', cell: (d) => h('div', null, h('code', { class: 'event-type' }, d.eventType), h('br'), h('span', { class: 'muted delivery-id' }, d.id)) },
        { label: 'Status', cell: (d) => badge(d.status) },
        { label: 'Status code', class: 'num', cell: (d) => h('span', { class: 'status-code' }, d.lastStatusCode ? String(d.lastStatusCode) : '—') },
        // Every attempt in the log, a replay's included (attempts counts
        // only those since the last replay).
        { label: 'Attempts', class: 'num', cell: (d) => h('span', { class: 'attempts' }, String(Math.max(d.log.length, d.attempts))) },
        { label: 'Latency', class: 'num', cell: (d) => latency(last(d.log)) },
        { label: 'Created', cell: (d) => time(d.createdAt) },
        { label: 'Next retry', cell: (d) => (d.status === 'PENDING' ? time(d.nextAttemptAt) : h('span', { class: 'muted' }, '—')) },
        { label: 'Response', cell: responseCell },
        { label: 'Actions', cell: replayCell },
      ],
    });
  }

  function responseCell(d) {
    const a = last(d.log);
    const parts = [];
    if (d.lastError) parts.push(h('p', { class: 'error last-error' }, d.lastError));
    if (a && a.response) parts.push(h('pre', { class: 'excerpt response-excerpt' }, excerpt(a.response, 300)));
    if (d.log.length > 0) parts.push(attemptsDetails(d));
    if (parts.length === 0) parts.push(h('span', { class: 'muted' }, d.status === 'PENDING' ? 'Not attempted yet' : '—'));
    // One element: on narrow screens each cell is a two-column grid
    // (its label, its content).
    return h('div', null, parts);
  }

  function attemptsDetails(d) {
    return h('details', { class: 'attempts-log' },
      h('summary', null, `All ${d.log.length} attempt${d.log.length === 1 ? '' : 's'}`),
      h('ol', { class: 'attempt-list' }, d.log.map((a) => h('li', null,
        h('p', null, time(a.at), ' · ', h('strong', null, a.statusCode ? String(a.statusCode) : 'no answer'), ' · ', latency(a)),
        a.error ? h('p', { class: 'error' }, a.error) : null,
        a.response ? h('pre', { class: 'excerpt' }, a.response) : null))));
  }

  function replayCell(d) {
    const b = button('Replay', null, { class: 'replay', 'aria-label': `Replay delivery ${d.id}`, disabled: !state.webhook || !state.webhook.enabled });
    b.addEventListener('click', async () => {
      b.disabled = true;
      try {
        await graphql(REPLAY, { id: d.id });
        announce('Delivery replayed.');
        watch(d.id);
      } catch (err) {
        state.logError = err;
        paintLog();
      }
    });
    return b;
  }

  async function loadLog() {
    const busy = logPanel.querySelector('.refresh-log');
    if (busy) busy.disabled = true;
    try {
      state.log = (await graphql(LOG_QUERY, logVariables(state))).webhookDeliveries;
      state.logError = null;
    } catch (err) {
      state.logError = err;
    }
    if (!stopped) paintLog();
  }

  // watch refreshes the log until the delivery id is attempted and no
  // longer pending (a minute at most): a test or replay shows its outcome
  // without a reload.
  function watch(id) {
    state.watching.add(id);
    const started = Date.now();
    const tick = async () => {
      timer = null;
      if (stopped) return;
      await loadLog();
      const shown = state.log ? state.log.nodes.find((d) => d.id === id) : null;
      if (shown && shown.status !== 'PENDING') state.watching.delete(id);
      if (Date.now() - started > 60_000) state.watching.clear();
      if (state.watching.size > 0 && !stopped) timer = setTimeout(tick, 1000);
    };
    if (!timer) timer = setTimeout(tick, 300);
  }

  paint();
  if (!state.webhook) {
    const el = endpointPanel.querySelector('input[name="url"]');
    if (el) queueMicrotask(() => el.focus());
  }
  return () => {
    stopped = true;
    if (timer) clearTimeout(timer);
  };
}

function append(el, ...children) {
  for (const c of children) el.append(c);
  return el;
}

function logVariables(state) {
  const v = { first: PAGE_SIZE, after: state.after };
  if (state.status) v.status = state.status;
  return v;
}

function last(list) {
  return list && list.length ? list[list.length - 1] : null;
}

function latency(a) {
  if (!a) return h('span', { class: 'latency muted' }, '—');
  return h('span', { class: 'latency' }, a.latencyMs < 1 ? '<1 ms' : `${a.latencyMs} ms`);
}

// copyText copies the input's value: the Clipboard API where the page
// may use it, else the selection and the old copy command.
async function copyText(input) {
  try {
    if (navigator.clipboard && window.isSecureContext) {
      await navigator.clipboard.writeText(input.value);
      return true;
    }
  } catch {
    // fall through to the selection
  }
  input.focus();
  input.select();
  try {
    return document.execCommand('copy');
  } catch {
    return false;
  }
}

// fieldErrors is a GraphQL error's per-field messages ({path, message}
// in extensions.fields) as {field: [messages]}, keyed by the path's
// first name (url, events).
function fieldErrors(err) {
  const list = err && Array.isArray(err.fields) ? err.fields : null;
  if (!list) return err && err.fields ? err.fields : null;
  const out = {};
  for (const f of list) {
    const name = Array.isArray(f.path) && f.path.length ? String(f.path[0]) : '';
    if (name) (out[name] = out[name] || []).push(f.message);
  }
  return Object.keys(out).length ? out : null;
}

// useStyles links pages.css (the Webhook and Cron pages' styles) once.
function useStyles() {
  if (document.querySelector('link[data-pages-css]')) return;
  const link = document.createElement('link');
  link.rel = 'stylesheet';
  link.href = new URL('./pages.css', import.meta.url).pathname;
  link.dataset.pagesCss = '';
  document.head.append(link);
}
