// The Email page: the account's addresses and domains, creating an
// address, sending an email, the emails sent with their status, and the
// sandbox mailbox (where emails go when no SMTP relay is configured).
// Addresses and sends go through the REST routes; the lists through
// GraphQL (emails, sandboxMailbox). Subjects, bodies and headers are put
// in as text; an HTML body is shown as its source, never rendered.

import { graphql, rest } from './api.js';
import {
  announce, append, badge, button, errorBox, excerpt, field, h, loading, mount, notice, pager, section,
  showFieldErrors, table, time,
} from './dom.js';

const pageSize = 20;
const mailboxPageSize = 10;

const emailsQuery = `query Emails($first: Int, $after: String) {
  emails(first: $first, after: $after) {
    nodes { id from to cc subject status smtpReply failureCode attempts createdAt sentAt }
    pageInfo { hasNextPage endCursor }
  }
}`;

const mailboxQuery = `query Mailbox($first: Int, $offset: Int) {
  sandboxMailbox(first: $first, offset: $offset) {
    enabled totalCount
    nodes { messageId from to cc bcc replyTo subject text html headers { name value } attachment { name contentType size sha256 } date }
  }
}`;

export async function render(root) {
  const account = (await rest('GET', '/accounts/{account}')).data;
  const addressesBox = h('div');
  const sentBox = h('div', { class: 'sent-emails' });
  const mailboxBox = h('div', { class: 'mailbox' });
  const state = { addresses: account.email_addresses || [], sentCursors: [null], sentPage: 0, mailboxOffset: 0 };

  // ---- addresses and domains ----
  function showAddresses() {
    const domains = [account.service_email_domain, ...(account.domains || []).map((d) => d.name)].filter(Boolean);
    mount(addressesBox,
      table({
        caption: 'Addresses you send from',
        columns: [
          { label: 'Address', cell: (a) => h('code', null, a.address) },
          { label: 'Created', cell: (a) => time(a.created_at) },
        ],
        rows: state.addresses,
        empty: 'No addresses yet: create one below to send email.',
      }),
      h('h3', null, 'Domains'),
      h('ul', { class: 'domains' },
        h('li', null, h('code', null, account.service_email_domain), ' ', h('span', { class: 'muted' }, '(the service domain; every account may use it)')),
        (account.domains || []).map((d) => h('li', null, h('code', null, d.name), ' ', h('span', { class: 'muted' }, '(a custom domain authorised for this account)')))),
      createForm(domains));
    refreshSendFrom();
  }

  function createForm(domains) {
    const local = h('input', { type: 'text', name: 'address', required: true, autocomplete: 'off', spellcheck: 'false', minlength: 5, maxlength: 30 });
    const domain = h('select', { name: 'domain_name' }, domains.map((d) => h('option', { value: d }, d)));
    const result = h('div', { 'aria-live': 'polite' });
    const form = h('form', { class: 'create-address', novalidate: true },
      h('h3', null, 'Create an address'),
      h('div', { class: 'grid' },
        field('Address (the part before @)', local, { hint: '5 to 30 characters: a-z, 0-9, dot, underscore, hyphen.' }),
        field('Domain', domain)),
      h('div', { class: 'actions' }, h('button', { type: 'submit' }, 'Create address')),
      result);
    form.addEventListener('submit', async (e) => {
      e.preventDefault();
      const submit = form.querySelector('button[type="submit"]');
      submit.disabled = true;
      mount(result);
      showFieldErrors(form, null);
      try {
        const created = await rest('POST', '/emails/{account}/create-email', { address: local.value.trim(), domain_name: domain.value });
        state.addresses = [...state.addresses, { email_id: created.email_id, address: created.address, created_at: created.created_at }];
        showAddresses();
        announce(`Address ${created.address} created.`);
        const ok = addressesBox.querySelector('.create-address [aria-live]');
        if (ok) mount(ok, notice('success', 'Created ', h('code', null, created.address), '.'));
      } catch (err) {
        if (err.fields) showFieldErrors(form, err.fields);
        mount(result, errorBox(err));
      } finally {
        submit.disabled = false;
      }
    });
    return form;
  }

  // ---- sending ----
  const sendFrom = h('select', { name: 'sender_address' });
  function refreshSendFrom() {
    const current = sendFrom.value;
    mount(sendFrom, state.addresses.map((a) => h('option', { value: a.address, selected: a.address === current }, a.address)));
    sendForm.hidden = state.addresses.length === 0;
    sendHint.hidden = state.addresses.length !== 0;
  }
  const to = h('input', { type: 'email', name: 'recipient_address', required: true, autocomplete: 'off', value: 'someone@example.org' });
  const subject = h('input', { type: 'text', name: 'subject', required: true });
  const body = h('textarea', { name: 'body', rows: 4, required: true });
  const sendResult = h('div', { 'aria-live': 'polite' });
  const sendHint = h('p', { class: 'empty' }, 'Create an address first.');
  const sendForm = h('form', { class: 'send-email', novalidate: true },
    h('div', { class: 'grid' }, field('From', sendFrom), field('To', to)),
    field('Subject', subject),
    field('Body', body, { hint: 'Plain text, or HTML (sent with a generated text part).' }),
    h('div', { class: 'actions' }, h('button', { type: 'submit' }, 'Send email')),
    sendResult);
  sendForm.addEventListener('submit', async (e) => {
    e.preventDefault();
    const submit = sendForm.querySelector('button[type="submit"]');
    submit.disabled = true;
    mount(sendResult);
    showFieldErrors(sendForm, null);
    try {
      const sent = await rest('POST', '/emails/{account}/send', {
        sender_address: sendFrom.value, recipient_address: to.value.trim(), subject: subject.value, body: body.value,
      });
      mount(sendResult, notice('success', 'Queued: ', h('code', null, sent.email_id), '. It shows below once delivered.'));
      announce('Email queued.');
      subject.value = '';
      body.value = '';
      state.sentPage = 0;
      loadSent();
      follow(sent.email_id);
    } catch (err) {
      if (err.fields) showFieldErrors(sendForm, err.fields);
      mount(sendResult, errorBox(err));
    } finally {
      submit.disabled = false;
    }
  });

  // follow reads a queued email's status until it is final (the sandbox
  // answers at once; a relay may take its time), then reads the lists
  // again.
  let stopped = false;
  async function follow(id) {
    for (let n = 0; n < 40 && !stopped; n++) {
      await new Promise((resolve) => setTimeout(resolve, Math.min(250 * 2 ** n, 5000)));
      try {
        const e = await rest('GET', `/emails/{account}/messages/${encodeURIComponent(id)}`);
        if (e.status !== 'queued') break;
      } catch {
        break;
      }
    }
    if (!stopped) {
      loadSent();
      loadMailbox();
    }
  }

  // ---- sent emails ----
  async function loadSent() {
    sentBox.setAttribute('aria-busy', 'true');
    if (!sentBox.firstChild) mount(sentBox, loading('Loading emails…'));
    try {
      const data = await graphql(emailsQuery, { first: pageSize, after: state.sentCursors[state.sentPage] });
      const conn = data.emails;
      state.sentCursors[state.sentPage + 1] = conn.pageInfo.hasNextPage ? conn.pageInfo.endCursor : undefined;
      mount(sentBox,
        table({
          caption: 'Emails, newest first',
          columns: [
            { label: 'Subject', cell: (m) => m.subject || h('span', { class: 'muted' }, '(no subject)') },
            { label: 'To', cell: (m) => [m.to, m.cc.length ? h('span', { class: 'muted' }, ` (cc ${m.cc.join(', ')})`) : null] },
            { label: 'From', cell: (m) => m.from },
            { label: 'Status', cell: (m) => [badge(m.status), m.failureCode ? [' ', h('code', null, m.failureCode)] : null] },
            { label: 'Created', cell: (m) => time(m.createdAt) },
            { label: 'Relay reply', cell: (m) => h('span', { class: 'reply' }, excerpt(m.smtpReply, 120)) },
          ],
          rows: conn.nodes,
          rowProps: (m) => ({ dataset: { id: m.id, status: m.status } }),
          empty: 'No emails sent yet.',
        }),
        pager({
          onPrev: state.sentPage > 0 ? () => { state.sentPage -= 1; loadSent(); } : null,
          onNext: () => { state.sentPage += 1; loadSent(); },
          hasNext: conn.pageInfo.hasNextPage,
          status: `Page ${state.sentPage + 1}`,
        }));
    } catch (e) {
      mount(sentBox, errorBox(e, loadSent));
    } finally {
      sentBox.removeAttribute('aria-busy');
    }
  }

  // ---- the sandbox mailbox ----
  async function loadMailbox() {
    mailboxBox.setAttribute('aria-busy', 'true');
    if (!mailboxBox.firstChild) mount(mailboxBox, loading('Loading the mailbox…'));
    try {
      const box = (await graphql(mailboxQuery, { first: mailboxPageSize, offset: state.mailboxOffset })).sandboxMailbox;
      if (!box.enabled) {
        mount(mailboxBox, notice('info', 'Emails go to your SMTP relay (SWITCHBOARD_SMTP_URL): there is no sandbox mailbox.'));
        return;
      }
      const from = box.totalCount ? state.mailboxOffset + 1 : 0;
      const upto = state.mailboxOffset + box.nodes.length;
      mount(mailboxBox,
        h('p', { class: 'hint' }, 'Without an SMTP relay, emails are kept here instead of being sent: in the database, so every server shows the same mailbox. The oldest go once your account holds its bound; an attachment is kept as its name, type, size and SHA-256, not its bytes.'),
        box.nodes.length === 0
          ? h('p', { class: 'empty' }, 'The mailbox is empty.')
          : h('ol', { class: 'mailbox-list', 'aria-label': 'Kept emails, newest first' }, box.nodes.map(keptEmail)),
        pager({
          onPrev: state.mailboxOffset > 0 ? () => { state.mailboxOffset = Math.max(0, state.mailboxOffset - mailboxPageSize); loadMailbox(); } : null,
          onNext: () => { state.mailboxOffset += mailboxPageSize; loadMailbox(); },
          hasNext: upto < box.totalCount,
          status: `${from}–${upto} of ${box.totalCount}`,
        }));
    } catch (e) {
      mount(mailboxBox, errorBox(e, loadMailbox));
    } finally {
      mailboxBox.removeAttribute('aria-busy');
    }
  }

  // byteSize says n bytes in the largest unit that keeps it at least 1.
  function byteSize(n) {
    const units = ['bytes', 'KiB', 'MiB', 'GiB'];
    let i = 0;
    while (n >= 1024 && i < units.length - 1) { n /= 1024; i++; }
    return i === 0 ? `${n} bytes` : `${n.toFixed(1)} ${units[i]}`;
  }

  function keptEmail(m) {
    const envelope = h('dl', { class: 'facts' },
      h('dt', null, 'From'), h('dd', null, m.from),
      h('dt', null, 'To'), h('dd', null, m.to),
      m.cc.length ? [h('dt', null, 'Cc'), h('dd', null, m.cc.join(', '))] : null,
      m.bcc.length ? [h('dt', null, 'Bcc'), h('dd', null, m.bcc.join(', '), h('span', { class: 'muted' }, ' (envelope only)'))] : null,
      m.replyTo.length ? [h('dt', null, 'Reply-To'), h('dd', null, m.replyTo.join(', '))] : null,
      h('dt', null, 'Date'), h('dd', null, time(m.date)),
      h('dt', null, 'Message-ID'), h('dd', null, h('code', null, m.messageId)),
      m.headers.map((hd) => [h('dt', null, hd.name), h('dd', null, hd.value)]),
      m.attachment ? [h('dt', null, 'Attachment'), h('dd', { class: 'attachment' },
        m.attachment.name, h('span', { class: 'muted' }, ` (${m.attachment.contentType || 'no type'}, ${byteSize(m.attachment.size)})`),
        h('br'), h('span', { class: 'muted' }, 'SHA-256 '), h('code', { class: 'sha256' }, m.attachment.sha256))] : null);
    return h('li', { class: 'kept-email panel', dataset: { messageId: m.messageId } },
      h('h3', { class: 'subject' }, m.subject || '(no subject)'),
      envelope,
      h('pre', { class: 'body', 'aria-label': 'Text part' }, m.text),
      m.html ? h('details', null, h('summary', null, 'HTML part (source)'), h('pre', { class: 'body html-source' }, m.html)) : null);
  }

  append(root,
    section('Addresses and domains', addressesBox),
    section('Send an email', sendHint, sendForm),
    section('Sent emails', h('div', { class: 'actions' }, button('Refresh', () => loadSent())), sentBox),
    section('Sandbox mailbox', h('div', { class: 'actions' }, button('Refresh', () => loadMailbox())), mailboxBox));
  showAddresses();
  await Promise.all([loadSent(), loadMailbox()]);
  return () => { stopped = true; };
}
