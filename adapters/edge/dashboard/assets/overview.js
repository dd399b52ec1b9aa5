// The Overview page: the account's numbers (service, provider, enabled),
// the health of its queue (what waits, runs, retries or failed for good),
// and its recent activity (messages, webhook deliveries, emails), kept up
// to date: messages live, the rest every few seconds while the page is
// shown.

import { graphql, onConnectivity } from './api.js';
import {
  append, badge, button, errorBox, excerpt, h, loading, mount, section, table, time,
} from './dom.js';
import { indicator, onReconnect, subscribe } from './live.js';

const overviewQuery = `query Overview {
  account { id name createdAt numbers { id number service provider enabled createdAt } emailAddresses { address } }
}`;

const healthQuery = `query Health {
  queueHealth { ready scheduled running retrying dead lagSeconds at
    kinds { kind ready scheduled running retrying dead oldestReadyAt } }
}`;

const activityQuery = `query Activity {
  threads(first: 8) { nodes { id name contact agentNumber service
    messages(first: 1) { nodes { id direction status senderName from createdAt content { kind text caption } } } } }
  webhookDeliveries(first: 5) { nodes { id eventType status attempts lastStatusCode createdAt } }
  emails(first: 5) { nodes { id subject to status createdAt } }
}`;

const receivedSub = `subscription Activity { messageReceived { id } }`;

const kindNames = {
  'message.deliver': 'Message deliveries',
  'email.deliver': 'Email deliveries',
  'webhook.deliver': 'Webhook deliveries',
  'cron.run': 'Cron runs',
};

const serviceName = (s) => (s === 'TELEGRAM' ? 'Telegram' : s === 'WHATSAPP' ? 'WhatsApp' : String(s || ''));

function duration(seconds) {
  if (seconds < 1) return 'none';
  if (seconds < 90) return `${Math.round(seconds)} s`;
  if (seconds < 5400) return `${Math.round(seconds / 60)} min`;
  return `${Math.round(seconds / 3600)} h`;
}

export async function render(root) {
  const { account } = await graphql(overviewQuery);
  const healthBox = h('div', { class: 'queue-health' }, loading('Reading the queue…'));
  const activityBox = h('div', { class: 'recent-activity' }, loading('Reading recent activity…'));

  const numbers = table({
    caption: 'Agent numbers (and bot identities) the account sends from',
    columns: [
      { label: 'Number', cell: (n) => h('code', null, n.number) },
      { label: 'Service', cell: (n) => serviceName(n.service) },
      { label: 'Provider', cell: (n) => n.provider },
      { label: 'Enabled', cell: (n) => badge(n.enabled ? 'enabled' : 'disabled') },
      { label: 'Added', cell: (n) => time(n.createdAt) },
    ],
    rows: account.numbers,
    empty: 'No numbers yet: an operator adds them with `switchboard numbers add`.',
  });

  async function loadHealth() {
    try {
      const q = (await graphql(healthQuery)).queueHealth;
      const tile = (label, value, bad) => h('li', { class: ['stat', bad ? 'bad' : null] },
        h('span', { class: 'value' }, value), h('span', { class: 'label' }, label));
      mount(healthBox,
        h('ul', { class: 'stats', 'aria-label': 'The queue now' },
          tile('due now', String(q.ready)),
          tile('scheduled', String(q.scheduled)),
          tile('running', String(q.running)),
          tile('retrying', String(q.retrying), q.retrying > 0),
          tile('failed for good', String(q.dead), q.dead > 0),
          tile('longest wait', duration(q.lagSeconds), q.lagSeconds > 60)),
        table({
          caption: 'By kind of work',
          columns: [
            { label: 'Work', cell: (k) => [kindNames[k.kind] || k.kind, ' ', h('code', { class: 'muted' }, k.kind)] },
            { label: 'Due', cell: (k) => String(k.ready), class: 'num' },
            { label: 'Scheduled', cell: (k) => String(k.scheduled), class: 'num' },
            { label: 'Running', cell: (k) => String(k.running), class: 'num' },
            { label: 'Retrying', cell: (k) => String(k.retrying), class: 'num' },
            { label: 'Failed', cell: (k) => String(k.dead), class: 'num' },
            { label: 'Waiting since', cell: (k) => (k.oldestReadyAt ? time(k.oldestReadyAt) : '—') },
          ],
          rows: q.kinds,
          empty: 'Nothing is waiting: every message, email, webhook and cron run is through.',
        }),
        h('p', { class: 'hint' }, 'Read at ', time(q.at), '.'));
    } catch (e) {
      mount(healthBox, errorBox(e, loadHealth));
    }
  }

  async function loadActivity() {
    try {
      const d = await graphql(activityQuery);
      const items = [];
      for (const t of d.threads.nodes) {
        const m = t.messages.nodes[0];
        if (!m) continue;
        const text = m.content.kind === 'TEXT' ? m.content.text : `[${m.content.kind.toLowerCase()}] ${m.content.caption || ''}`;
        const who = m.direction === 'INBOUND' ? (m.senderName || m.from) : 'You';
        items.push({
          at: m.createdAt,
          node: [h('span', { class: 'what' },
            h('a', { href: `/dashboard/threads/${encodeURIComponent(t.id)}` }, t.name || t.contact || t.agentNumber), ': ',
            `${who}: `, excerpt(text, 90)), badge(m.status), time(m.createdAt)],
        });
      }
      for (const w of d.webhookDeliveries.nodes) {
        items.push({
          at: w.createdAt,
          node: [h('span', { class: 'what' }, h('a', { href: '/dashboard/webhook' }, 'Webhook'), `: ${w.eventType}`,
            w.lastStatusCode ? ` → HTTP ${w.lastStatusCode}` : '', w.attempts > 1 ? ` (${w.attempts} attempts)` : ''),
          badge(w.status), time(w.createdAt)],
        });
      }
      for (const e of d.emails.nodes) {
        items.push({
          at: e.createdAt,
          node: [h('span', { class: 'what' }, h('a', { href: '/dashboard/email' }, 'Email'), `: ${excerpt(e.subject, 60)} → ${e.to}`),
            badge(e.status), time(e.createdAt)],
        });
      }
      items.sort((a, b) => (a.at < b.at ? 1 : a.at > b.at ? -1 : 0));
      mount(activityBox, items.length
        ? h('ul', { class: 'activity', 'aria-label': 'Recent activity, newest first' }, items.slice(0, 12).map((i) => h('li', null, i.node)))
        : h('p', { class: 'empty' }, 'Nothing yet. Simulate an inbound message on the Threads page to see it here.'));
    } catch (e) {
      mount(activityBox, errorBox(e, loadActivity));
    }
  }

  function refresh() {
    loadHealth();
    loadActivity();
  }

  // Messages are live; the queue and the rest are read again every ten
  // seconds while the page is visible.
  let activityTimer = null;
  const stops = [
    subscribe(receivedSub, {}, () => {
      clearTimeout(activityTimer);
      activityTimer = setTimeout(refresh, 200);
    }),
    onReconnect(refresh),
    onConnectivity((up) => { if (up) refresh(); }),
  ];
  const timer = setInterval(() => { if (document.visibilityState === 'visible') refresh(); }, 10000);

  append(root,
    h('div', { class: 'page-head' },
      h('p', { class: 'muted' }, 'Account ', h('strong', null, account.name), ' ', h('code', null, account.id), ' · created ', time(account.createdAt)),
      indicator()),
    h('div', { class: 'grid' },
      section('Numbers', numbers),
      section('Queue health', h('div', { class: 'actions' }, button('Refresh', refresh)), healthBox)),
    section('Recent activity', activityBox));
  await Promise.all([loadHealth(), loadActivity()]);
  return () => {
    clearInterval(timer);
    clearTimeout(activityTimer);
    for (const stop of stops) stop();
  };
}
