// The Threads page: the account's conversations (/dashboard/threads),
// filtered by a phone number and paged, and one thread
// (/dashboard/threads/<thread id>) with its messages, their status
// timelines, a reply box and, for sandbox numbers, "Simulate an inbound
// message". New messages and status changes arrive live over the GraphQL
// subscriptions. Everything a user or a chat wrote is put in as text.

import { graphql, rest, onConnectivity } from './api.js';
import {
  announce, append, badge, button, errorBox, excerpt, field, h, loading, mount, notice, pager, safeURL,
  section, showFieldErrors, time,
} from './dom.js';
import { indicator, onReconnect, subscribe } from './live.js';
import { navigate, replace } from './router.js';

const pageSize = 20;

const numbersQuery = `query Numbers { account { numbers { number service provider enabled } } }`;

const messageFields = `id threadId direction status from to senderName failureCode failureText createdAt
  content { kind text mediaUrl mimeType size fileName variant caption latitude longitude placeName address buttonId }
  replyTo { messageId text } reactions { emoji reactor fromAgent } buttons { id title } editedAt deleted deletedAt`;

const threadsQuery = `query Threads($first: Int, $after: String, $filter: ThreadFilter) {
  threads(first: $first, after: $after, filter: $filter) {
    nodes { id service type name contact agentNumber createdAt updatedAt
      messages(first: 1) { nodes { ${messageFields} } } }
    pageInfo { hasNextPage endCursor }
  }
}`;

const threadQuery = `query Thread($id: ID!, $after: String) {
  thread(id: $id) {
    id service type name contact agentNumber lastInboundAt windowClosesAt windowOpen createdAt
    participants { address name admin isAgent }
    messages(first: ${pageSize}, after: $after) {
      nodes { ${messageFields} timeline { status at failureCode failureText } }
      pageInfo { hasNextPage endCursor }
    }
  }
}`;

const sendMutation = `mutation Reply($input: SendMessageInput!) {
  sendMessage(input: $input) { ${messageFields} timeline { status at failureCode failureText } }
}`;

const receivedSub = `subscription Received($threadId: ID) {
  messageReceived(threadId: $threadId) { ${messageFields} timeline { status at failureCode failureText } }
}`;

const statusSub = `subscription Status($threadId: ID) {
  messageStatusChanged(threadId: $threadId) { ${messageFields} timeline { status at failureCode failureText } }
}`;

export async function render(root, ctx) {
  const { account } = await graphql(numbersQuery);
  if (ctx.rest) return renderThread(root, ctx.rest, account.numbers);
  return renderList(root, ctx, account.numbers);
}

// ---- helpers ------------------------------------------------------------

const serviceName = (s) => (s === 'TELEGRAM' ? 'Telegram' : s === 'WHATSAPP' ? 'WhatsApp' : String(s || ''));

function sandboxNumbers(numbers) {
  return numbers.filter((n) => n.provider === 'sandbox' && n.enabled);
}

function isSandbox(numbers, service, number) {
  return numbers.some((n) => n.provider === 'sandbox' && n.service === service && n.number === number);
}

/** summary is a message's content in one line, for listings. */
function summary(m) {
  if (!m) return '';
  const c = m.content || {};
  switch (c.kind) {
    case 'TEXT': return c.text;
    case 'BUTTON_REPLY': return `🔘 ${c.text || c.buttonId}`;
    case 'LOCATION': return `📍 ${c.placeName || c.address || `${c.latitude}, ${c.longitude}`}`;
    default: return `[${String(c.kind || '').toLowerCase()}] ${c.caption || ''}`.trim();
  }
}

/** linkOrText is a link to a URL the data gave, when it is a safe one. */
function linkOrText(url, label) {
  const safe = safeURL(url);
  return safe ? h('a', { href: safe, rel: 'noopener noreferrer nofollow', target: '_blank' }, label || url) : h('span', null, url);
}

function contentView(m) {
  const c = m.content || {};
  if (c.kind === 'TEXT') {
    const text = h('p', { class: 'text' }, c.text);
    if (!(m.buttons || []).length) return text;
    return h('div', null, text,
      h('ul', { class: 'buttons', 'aria-label': 'Reply buttons' },
        m.buttons.map((b) => h('li', { title: `id ${b.id}` }, b.title))));
  }
  if (c.kind === 'BUTTON_REPLY') {
    return h('p', { class: 'text button-reply' }, 'Pressed ', h('span', { class: 'pressed', title: `id ${c.buttonId}` }, c.text || c.buttonId));
  }
  if (c.kind === 'LOCATION') {
    return h('p', { class: 'text' }, '📍 ', [c.placeName, c.address].filter(Boolean).join(', ') || 'A location',
      ` (${c.latitude}, ${c.longitude})`);
  }
  const kind = c.variant ? String(c.variant).toLowerCase() : String(c.kind || '').toLowerCase();
  const about = [c.fileName, c.mimeType, c.size ? `${c.size} bytes` : ''].filter(Boolean).join(', ');
  return h('div', null,
    sentImage(c) ? h('p', null, h('img', { class: 'media', src: sentImage(c), alt: c.caption || 'An image the user sent' })) : null,
    h('p', { class: 'text' }, `${kind}: `, linkOrText(c.mediaUrl, 'open the file'), about ? h('span', { class: 'muted' }, ` (${about})`) : null),
    c.caption ? h('p', { class: 'text' }, c.caption) : null);
}

// sentImage is the address on this page's origin of an image a user sent:
// its signed media link, whose signature does not depend on the host the
// link was written with (the page's policy loads images from here only);
// empty for anything else.
function sentImage(c) {
  if (c.kind !== 'IMAGE' || typeof c.mediaUrl !== 'string') return '';
  let u;
  try { u = new URL(c.mediaUrl); } catch { return ''; }
  return u.pathname.startsWith('/v1/media/') ? `${location.origin}${u.pathname}${u.search}` : '';
}

// ---- the list -----------------------------------------------------------

async function renderList(root, ctx, numbers) {
  const phone = (ctx.params.get('phone') || '').trim();
  const state = { phone, cursors: [null], page: 0, pending: false };
  const sandbox = sandboxNumbers(numbers);

  const listBox = h('div', { class: 'thread-list-box', 'aria-live': 'off' });
  const status = h('p', { class: 'pager-status visually-hidden', role: 'status' });
  const newNotice = h('div', { hidden: true });

  const phoneInput = h('input', { type: 'search', name: 'phone', value: phone, placeholder: '+14155550123', autocomplete: 'off', inputmode: 'tel' });
  const filterForm = h('form', { class: 'toolbar', role: 'search', onsubmit: (e) => { e.preventDefault(); applyFilter(phoneInput.value.trim()); } },
    field('Filter by phone number', phoneInput, { hint: 'An agent number, a user or a group member, in E.164 form.' }),
    h('div', { class: 'actions' },
      h('button', { type: 'submit' }, 'Filter'),
      button('Clear', () => { phoneInput.value = ''; applyFilter(''); }, { class: 'secondary' })),
  );

  function applyFilter(value) {
    state.phone = value;
    state.cursors = [null];
    state.page = 0;
    const url = new URL(location.href);
    if (value) url.searchParams.set('phone', value);
    else url.searchParams.delete('phone');
    replace(url.pathname + url.search);
    load();
  }

  let loadSeq = 0;
  async function load() {
    const seq = ++loadSeq;
    listBox.setAttribute('aria-busy', 'true');
    if (!listBox.firstChild) mount(listBox, loading('Loading threads…'));
    try {
      const vars = { first: pageSize, after: state.cursors[state.page] };
      if (state.phone) vars.filter = { phoneNumber: state.phone };
      const data = await graphql(threadsQuery, vars);
      if (seq !== loadSeq) return;
      const conn = data.threads;
      state.cursors[state.page + 1] = conn.pageInfo.hasNextPage ? conn.pageInfo.endCursor : undefined;
      mount(listBox, threadList(conn.nodes), pager({
        onPrev: state.page > 0 ? () => { state.page -= 1; load(); } : null,
        onNext: () => { state.page += 1; load(); },
        hasNext: conn.pageInfo.hasNextPage,
        status: `Page ${state.page + 1}`,
      }));
      status.textContent = `${conn.nodes.length} threads on page ${state.page + 1}`;
      newNotice.hidden = true;
    } catch (e) {
      if (seq !== loadSeq) return;
      mount(listBox, errorBox(e, load));
    } finally {
      if (seq === loadSeq) listBox.removeAttribute('aria-busy');
    }
  }

  function threadList(threads) {
    if (threads.length === 0) {
      return h('p', { class: 'empty' }, state.phone
        ? `No thread has ${state.phone} in it.`
        : 'No conversations yet. When a user writes to one of your numbers, the thread shows here' +
          (sandbox.length ? ' — or simulate one with the form below.' : '.'));
    }
    return h('ul', { class: 'thread-list', 'aria-label': 'Threads' }, threads.map((t) => {
      const last = t.messages.nodes[0];
      const href = `/dashboard/threads/${encodeURIComponent(t.id)}`;
      return h('li', { dataset: { threadId: t.id } },
        h('a', {
          class: 'thread-link', href,
          onclick: (e) => {
            if (e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
            e.preventDefault();
            navigate(href);
          },
        },
        h('span', { class: 'name' }, t.name || t.contact || t.agentNumber),
        h('span', { class: 'when' }, time(last ? last.createdAt : t.createdAt)),
        h('span', { class: 'last' }, last ? (last.direction === 'INBOUND' ? '' : 'You: ') + summary(last) : 'No messages yet'),
        h('span', { class: 'meta' }, `${serviceName(t.service)} · ${t.type === 'GROUP' ? 'group' : t.contact} · via ${t.agentNumber}`)));
    }));
  }

  // Live: a new message moves its thread to the top of the first page,
  // so the first page is read again; elsewhere a notice offers it.
  let refreshTimer = null;
  function onActivity() {
    if (state.page === 0) {
      clearTimeout(refreshTimer);
      refreshTimer = setTimeout(load, 150);
    } else {
      mount(newNotice, notice('info', 'New messages arrived. ', button('Show the newest threads', () => { state.page = 0; load(); })));
      newNotice.hidden = false;
    }
  }
  const stops = [
    subscribe(receivedSub, {}, onActivity),
    onReconnect(() => load()),
    onConnectivity((up) => { if (up) load(); }),
  ];

  append(root,
    h('div', { class: 'page-head' }, indicator()),
    filterForm, newNotice, status,
    section('Threads', listBox),
    sandbox.length ? section('Simulate an inbound message', simulateForm(sandbox, null, (answer) => {
      announce('Simulated message stored.');
      if (state.page !== 0 || state.phone) load();
      return answer;
    })) : null,
  );
  await load();
  return () => {
    clearTimeout(refreshTimer);
    for (const stop of stops) stop();
  };
}

/**
 * simulateForm lets a (pretend) user write to a sandbox number, through
 * the sandbox's REST route, as the API's clients do. For a thread, the
 * user (or, in a group, the member) and the number are the thread's.
 */
function simulateForm(sandbox, thread, done) {
  const result = h('div', { 'aria-live': 'polite' });
  const text = h('textarea', { name: 'message', required: true, rows: 2 });
  const senderName = h('input', { type: 'text', name: 'sender_name', autocomplete: 'off' });
  let from;
  let to;
  if (!thread) {
    from = h('input', { type: 'tel', name: 'from', required: true, value: '+14155550123', autocomplete: 'off' });
    to = h('select', { name: 'to' }, sandbox.map((n) => h('option', { value: `${n.service}|${n.number}` }, `${n.number} (${serviceName(n.service)})`)));
  } else if (thread.type === 'GROUP') {
    const members = thread.participants.filter((p) => !p.isAgent);
    from = h('select', { name: 'from' }, members.map((p) => h('option', { value: p.address }, p.name ? `${p.name} (${p.address})` : p.address)));
  }
  const form = h('form', { class: 'simulate', novalidate: true },
    thread ? h('p', { class: 'hint' }, 'As the user, in this sandbox thread; the message goes through the same path as a real inbound one (webhooks included).')
      : h('p', { class: 'hint' }, 'A user writes to one of your sandbox numbers: the thread opens, your webhook gets the message, and you may reply.'),
    from ? field(thread ? 'From (a member)' : "The user's number", from) : null,
    to ? field('To your sandbox number', to) : null,
    field('Their name (optional)', senderName),
    field('Message', text),
    h('div', { class: 'actions' }, h('button', { type: 'submit' }, 'Simulate an inbound message')),
    result,
  );
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    const submit = form.querySelector('button[type="submit"]');
    submit.disabled = true;
    mount(result);
    showFieldErrors(form, null);
    try {
      let body;
      if (thread) {
        body = { service: thread.service.toLowerCase(), to: thread.agentNumber, message: text.value, sender_name: senderName.value || undefined };
        if (thread.type === 'GROUP') {
          body.thread_id = thread.id;
          body.from = from.value;
        } else {
          body.from = thread.contact;
        }
      } else {
        const [service, number] = to.value.split('|');
        body = { service: service.toLowerCase(), from: from.value.trim(), to: number, message: text.value, sender_name: senderName.value || undefined };
      }
      const answer = await rest('POST', '/sandbox/{account}/inbound', body);
      text.value = '';
      const href = `/dashboard/threads/${encodeURIComponent(answer.thread_id)}`;
      mount(result, notice('success', 'Received. ', thread ? null : h('a', {
        href, onclick: (ev) => { ev.preventDefault(); navigate(href); },
      }, 'Open the thread')));
      done(answer);
    } catch (err) {
      if (err.fields) showFieldErrors(form, err.fields);
      mount(result, errorBox(err));
    } finally {
      submit.disabled = false;
    }
  });
  return form;
}

// ---- one thread ---------------------------------------------------------

const outboundSteps = ['QUEUED', 'SENT', 'DELIVERED', 'READ'];
const rank = { QUEUED: 0, SENT: 1, DELIVERED: 2, READ: 3, FAILED: 4, RECEIVED: 0 };

/** newer reports whether message b is at least as far on as a. */
function further(a, b) {
  if (!a) return true;
  if (a.status === 'FAILED') return b.status === 'FAILED';
  return rank[b.status] >= rank[a.status];
}

function timelineView(m) {
  const at = {};
  let failure = null;
  for (const step of m.timeline || []) {
    if (!at[step.status]) at[step.status] = step.at;
    if (step.status === 'FAILED') failure = step;
  }
  if (m.direction === 'INBOUND') {
    return h('ol', { class: 'timeline', 'aria-label': 'Status' },
      h('li', { class: 'done', dataset: { step: 'RECEIVED' } }, 'received', time(at.RECEIVED || m.createdAt)));
  }
  const reached = m.status === 'FAILED' ? -1 : rank[m.status];
  const steps = outboundSteps.map((s, i) => {
    const done = i <= reached || Boolean(at[s]);
    if (m.status === 'FAILED' && !at[s]) return null;
    return h('li', { class: done ? 'done' : 'todo', dataset: { step: s } }, s.toLowerCase(), at[s] ? time(at[s]) : null);
  });
  if (m.status === 'FAILED') {
    steps.push(h('li', { class: 'failed', dataset: { step: 'FAILED' } }, 'failed', at.FAILED ? time(at.FAILED) : null));
  }
  const why = m.status === 'FAILED'
    ? h('p', { class: 'failure' }, 'Failed: ', h('code', null, m.failureCode || (failure && failure.failureCode) || 'unknown'),
      (m.failureText || (failure && failure.failureText)) ? ` — ${m.failureText || failure.failureText}` : '')
    : null;
  return [h('ol', { class: 'timeline', 'aria-label': 'Status timeline' }, steps), why];
}

function messageView(m, thread, isNew) {
  const inbound = m.direction === 'INBOUND';
  const who = inbound
    ? [m.senderName ? `${m.senderName} · ` : '', m.from]
    : ['You · ', m.from];
  return h('li', {
    class: ['message', inbound ? 'inbound' : 'outbound', isNew ? 'new' : null], id: `msg-${m.id}`,
    dataset: { id: m.id, status: m.status }, 'aria-label': inbound ? 'Inbound message' : 'Outbound message',
  },
  h('p', { class: 'from' }, who),
  m.replyTo ? h('blockquote', { class: 'quote', 'aria-label': 'Replying to' }, m.replyTo.text || 'an earlier message') : null,
  m.deleted
    ? h('p', { class: 'deleted', 'aria-label': 'Deleted message' }, 'This message was deleted', m.deletedAt ? [' · ', time(m.deletedAt)] : null)
    : contentView(m),
  m.editedAt && !m.deleted ? h('p', { class: 'edited', 'aria-label': 'Edited' }, 'edited ', time(m.editedAt)) : null,
  (m.reactions || []).length ? h('p', { class: 'reactions', 'aria-label': 'Reactions' },
    m.reactions.map((r) => h('span', { title: r.fromAgent ? 'You' : r.reactor }, r.emoji))) : null,
  h('div', { class: 'meta' },
    time(m.createdAt), h('span', null, inbound ? 'Inbound' : 'Outbound'), badge(m.status)),
  timelineView(m));
}

async function renderThread(root, threadId, numbers) {
  let data = await graphql(threadQuery, { id: threadId, after: null });
  const thread = data.thread;
  if (!thread) {
    append(root, notice('error', h('p', null, 'There is no such thread in this account.')),
      h('p', null, h('a', { href: '/dashboard/threads' }, 'All threads')));
    return undefined;
  }
  document.title = `${thread.name || thread.contact || 'Thread'} · Threads · Switchboard`;
  const messages = new Map();
  const list = h('ol', { class: 'messages', 'aria-label': 'Messages, oldest first' });
  let olderCursor = data.thread.messages.pageInfo.hasNextPage ? data.thread.messages.pageInfo.endCursor : null;
  const olderBox = h('div', { class: 'older' });

  function put(m, isNew) {
    const have = messages.get(m.id);
    if (have && !further(have, m)) return;
    messages.set(m.id, m);
    const el = messageView(m, thread, isNew && !have);
    const old = list.querySelector(`#${CSS.escape('msg-' + m.id)}`);
    if (old) {
      old.replaceWith(el);
      return;
    }
    // Keep the list in time order (oldest first).
    const after = [...list.children].find((li) => {
      const other = messages.get(li.dataset.id);
      return other && (other.createdAt > m.createdAt || (other.createdAt === m.createdAt && other.id > m.id));
    });
    list.insertBefore(el, after || null);
  }

  function showOlderButton() {
    mount(olderBox, olderCursor ? button('Load older messages', loadOlder) : null);
  }

  async function loadOlder() {
    const btn = olderBox.querySelector('button');
    if (btn) btn.disabled = true;
    try {
      const page = await graphql(threadQuery, { id: threadId, after: olderCursor });
      for (const m of page.thread.messages.nodes) put(m, false);
      olderCursor = page.thread.messages.pageInfo.hasNextPage ? page.thread.messages.pageInfo.endCursor : null;
      showOlderButton();
    } catch (e) {
      mount(olderBox, errorBox(e, loadOlder));
    }
  }

  async function refresh() {
    try {
      data = await graphql(threadQuery, { id: threadId, after: null });
      for (const m of data.thread.messages.nodes) put(m, false);
    } catch (e) {
      console.error(e);
    }
  }

  for (const m of data.thread.messages.nodes) put(m, false);
  showOlderButton();

  const others = thread.participants.filter((p) => !p.isAgent);
  const facts = h('dl', { class: 'facts' },
    h('dt', null, 'Service'), h('dd', null, serviceName(thread.service)),
    h('dt', null, 'Type'), h('dd', null, thread.type === 'GROUP' ? 'Group' : 'One-to-one'),
    h('dt', null, 'Your number'), h('dd', null, thread.agentNumber),
    thread.type === 'GROUP'
      ? [h('dt', null, 'Members'), h('dd', null, others.map((p) => (p.name ? `${p.name} (${p.address})` : p.address) + (p.admin ? ' · admin' : '')).join(', ') || '—')]
      : [h('dt', null, 'User'), h('dd', null, thread.contact)],
    thread.windowClosesAt ? [h('dt', null, 'Reply window'), h('dd', { class: 'window' }, windowView(thread))] : null,
    h('dt', null, 'Thread id'), h('dd', null, h('code', null, thread.id)),
  );

  const replyForm = buildReply(thread, (m) => {
    put(m, true);
    announce('Message queued.');
  });

  const stops = [
    subscribe(receivedSub, { threadId }, (d) => { put(d.messageReceived, true); announce('New message.'); }),
    subscribe(statusSub, { threadId }, (d) => put(d.messageStatusChanged, false)),
    onReconnect(refresh),
    onConnectivity((up) => { if (up) refresh(); }),
  ];

  const back = h('a', {
    href: '/dashboard/threads', class: 'back',
    onclick: (e) => { if (e.button === 0 && !e.metaKey && !e.ctrlKey) { e.preventDefault(); navigate('/dashboard/threads'); } },
  }, '← All threads');

  append(root,
    h('div', { class: 'page-head' }, back, indicator()),
    h('section', { class: 'panel thread', 'aria-labelledby': 'thread-title' },
      h('h2', { id: 'thread-title' }, thread.name || thread.contact || thread.agentNumber),
      facts),
    section('Messages', olderBox, messages.size ? null : h('p', { class: 'empty' }, 'No messages yet.'), list),
    section('Reply', replyForm),
    isSandbox(numbers, thread.service, thread.agentNumber)
      ? section('Simulate an inbound message', simulateForm([], thread, () => {}))
      : null,
  );
  // The "no messages" line goes once one arrives.
  const observer = new MutationObserver(() => {
    const empty = root.querySelector('.panel .empty');
    if (empty && list.children.length) empty.remove();
  });
  observer.observe(list, { childList: true });
  stops.push(() => observer.disconnect());
  return () => { for (const stop of stops) stop(); };
}

// windowView says whether the thread's customer service window (WhatsApp:
// 24 hours from the user's last message) takes free-form replies now.
function windowView(thread) {
  return thread.windowOpen
    ? ['Open until ', time(thread.windowClosesAt)]
    : ['Closed since ', time(thread.windowClosesAt), ': only a template message can be sent until the user writes again.'];
}

function buildReply(thread, sent) {
  const text = h('textarea', { name: 'text', rows: 3, required: true });
  const result = h('div', { 'aria-live': 'polite' });
  const hint = thread.type === 'GROUP'
    ? `Sent into the group from ${thread.agentNumber}.`
    : `Sent to ${thread.contact} from ${thread.agentNumber}.` + (thread.lastInboundAt ? '' : ' The user must write first.');
  const form = h('form', { class: 'reply', novalidate: true },
    field('Your reply', text, { hint }),
    h('div', { class: 'actions' }, h('button', { type: 'submit' }, 'Send')),
    result);
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    const submit = form.querySelector('button[type="submit"]');
    if (!text.value.trim()) {
      showFieldErrors(form, { text: ['Write something to send.'] });
      return;
    }
    submit.disabled = true;
    mount(result);
    showFieldErrors(form, null);
    const input = { service: thread.service, from: thread.agentNumber, text: text.value };
    if (thread.type === 'GROUP') input.threadId = thread.id;
    else input.to = thread.contact;
    try {
      const data = await graphql(sendMutation, { input });
      text.value = '';
      sent(data.sendMessage);
      text.focus();
    } catch (err) {
      if (err.fields) {
        const fields = {};
        for (const [k, v] of Object.entries(err.fields)) fields[k === 'content' || k === 'message' ? 'text' : k] = v;
        showFieldErrors(form, fields);
      }
      mount(result, errorBox(err));
    } finally {
      submit.disabled = false;
    }
  });
  return form;
}
