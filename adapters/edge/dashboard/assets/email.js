// The Email page: the account's addresses and domains, creating an
// address, sending an email, the inbox of an address (received and sent
// email, newest first, each opening its thread), simulating a received
// email, the emails sent with their status, and the sandbox mailbox
// (where emails go when no SMTP relay is configured). An email thread
// (/dashboard/email/eth_…) shows its emails oldest first and answers the
// newest received one. Addresses, sends and simulations go through the
// REST routes; the lists, threads and replies through GraphQL (emails,
// mailboxEmails, emailThread, replyEmail, sandboxMailbox). Subjects,
// bodies and headers are put in as text; an HTML body is shown as its
// source, never rendered.

import { graphql, rest } from './api.js';
import {
  announce, append, badge, button, errorBox, excerpt, field, h, loading, mount, notice, pager, section,
  showFieldErrors, table, time,
} from './dom.js';
import { navigate } from './router.js';

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

const inboxQuery = `query Inbox($address: String!, $first: Int, $after: String) {
  mailboxEmails(address: $address, first: $first, after: $after) {
    nodes { id direction threadId from fromName to subject status extractedText body dmarcFailed createdAt }
    pageInfo { hasNextPage endCursor }
  }
}`;

const threadQuery = `query EmailThread($id: ID!) {
  emailThread(id: $id) {
    id subject
    emails {
      id direction mailbox from fromName toList { name address } cc subject status smtpReply failureCode
      body html htmlBody extractedText dmarcFailed authentication { spf dkim dmarc reason }
      attachments { id name contentType size stored } createdAt
    }
  }
}`;

const replyMutation = `mutation Reply($input: ReplyEmailInput!) { replyEmail(input: $input) { id threadId } }`;

// threadHref is an email thread's page.
function threadHref(threadId) {
  return `/dashboard/email/${encodeURIComponent(threadId)}`;
}

// threadLink is a link to an email thread that stays within the page.
function threadLink(threadId, ...children) {
  const href = threadHref(threadId);
  return h('a', {
    href, class: 'thread-link',
    onclick: (e) => { if (e.button === 0 && !e.metaKey && !e.ctrlKey) { e.preventDefault(); navigate(href); } },
  }, children);
}

// sender is an email's sender as people read it: the name and the
// address, or the address.
function sender(m) {
  return m.fromName ? [m.fromName, ' ', h('span', { class: 'muted' }, `<${m.from}>`)] : m.from;
}

// byteSize says n bytes in the largest unit that keeps it at least 1.
function byteSize(n) {
  const units = ['bytes', 'KiB', 'MiB', 'GiB'];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) { n /= 1024; i++; }
  return i === 0 ? `${n} bytes` : `${n.toFixed(1)} ${units[i]}`;
}

export async function render(root, ctx) {
  if (ctx && ctx.rest) return renderThread(root, ctx.rest);
  const account = (await rest('GET', '/accounts/{account}')).data;
  const addressesBox = h('div');
  const sentBox = h('div', { class: 'sent-emails' });
  const mailboxBox = h('div', { class: 'mailbox' });
  const inboxBox = h('div', { class: 'inbox' });
  const state = {
    addresses: account.email_addresses || [], sentCursors: [null], sentPage: 0, mailboxOffset: 0,
    inboxCursors: [null], inboxPage: 0,
  };

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
        loadInbox();
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
    for (const select of [inboxAddress, simulateTo]) {
      const was = select.value;
      mount(select, state.addresses.map((a) => h('option', { value: a.address, selected: a.address === was }, a.address)));
    }
    inboxControls.hidden = simulateForm.hidden = state.addresses.length === 0;
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
        // The answer is {status: 'success', data: {status, …}}: the
        // email's own status is in data.
        const { data } = await rest('GET', `/emails/{account}/messages/${encodeURIComponent(id)}`);
        if (!data || data.status !== 'queued') break;
      } catch {
        break;
      }
    }
    if (!stopped) {
      loadSent();
      loadMailbox();
    }
  }

  // ---- the inbox of an address ----
  const inboxAddress = h('select', { name: 'mailbox', 'aria-label': 'Address' });
  inboxAddress.addEventListener('change', () => {
    state.inboxCursors = [null];
    state.inboxPage = 0;
    loadInbox();
  });
  const inboxControls = h('div', { class: 'actions' }, field('Address', inboxAddress), button('Refresh', () => loadInbox()));
  async function loadInbox() {
    if (!inboxAddress.value) {
      mount(inboxBox, h('p', { class: 'empty' }, 'Create an address first: mail sent to it shows here.'));
      return;
    }
    inboxBox.setAttribute('aria-busy', 'true');
    if (!inboxBox.firstChild) mount(inboxBox, loading('Loading the inbox…'));
    try {
      const conn = (await graphql(inboxQuery, { address: inboxAddress.value, first: pageSize, after: state.inboxCursors[state.inboxPage] })).mailboxEmails;
      state.inboxCursors[state.inboxPage + 1] = conn.pageInfo.hasNextPage ? conn.pageInfo.endCursor : undefined;
      mount(inboxBox,
        table({
          caption: `Emails of ${inboxAddress.value}, newest first`,
          columns: [
            { label: '', cell: (m) => badge(m.direction === 'INBOUND' ? 'received' : 'sent') },
            { label: 'From', cell: (m) => sender(m) },
            { label: 'Subject', cell: (m) => threadLink(m.threadId, m.subject || '(no subject)') },
            { label: 'Text', cell: (m) => h('span', { class: 'excerpt' }, excerpt(m.direction === 'INBOUND' ? m.extractedText : m.body, 100)) },
            {
              label: 'Status',
              cell: (m) => [badge(m.status), m.dmarcFailed ? [' ', h('span', { class: 'badge badge-failed', title: 'The sender\'s domain publishes DMARC and this email fails it: the From is likely forged.' }, 'dmarc failed')] : null],
            },
            { label: 'Date', cell: (m) => time(m.createdAt) },
          ],
          rows: conn.nodes,
          rowProps: (m) => ({ dataset: { id: m.id, direction: m.direction, thread: m.threadId } }),
          empty: 'No email yet: mail to this address shows here, and what it sends.',
        }),
        pager({
          onPrev: state.inboxPage > 0 ? () => { state.inboxPage -= 1; loadInbox(); } : null,
          onNext: () => { state.inboxPage += 1; loadInbox(); },
          hasNext: conn.pageInfo.hasNextPage,
          status: `Page ${state.inboxPage + 1}`,
        }));
    } catch (e) {
      mount(inboxBox, errorBox(e, loadInbox));
    } finally {
      inboxBox.removeAttribute('aria-busy');
    }
  }

  // ---- simulating a received email (the sandbox) ----
  const simulateTo = h('select', { name: 'to' });
  const simulateFrom = h('input', { type: 'text', name: 'from', required: true, autocomplete: 'off', value: 'Ann Example <ann@example.org>' });
  const simulateSubject = h('input', { type: 'text', name: 'subject' });
  const simulateText = h('textarea', { name: 'text', rows: 3, required: true });
  const simulateResult = h('div', { 'aria-live': 'polite' });
  const simulateForm = h('form', { class: 'simulate-email', novalidate: true },
    h('p', { class: 'hint' }, 'Deliver an email to one of your addresses as if a mail server had sent it: it is received, threaded and sent to your webhook as email.received, like any other.'),
    h('div', { class: 'grid' }, field('From', simulateFrom, { hint: 'An address, or Name <address>.' }), field('To', simulateTo)),
    field('Subject', simulateSubject),
    field('Text', simulateText),
    h('div', { class: 'actions' }, h('button', { type: 'submit' }, 'Simulate received email')),
    simulateResult);
  simulateForm.addEventListener('submit', async (e) => {
    e.preventDefault();
    const submit = simulateForm.querySelector('button[type="submit"]');
    submit.disabled = true;
    mount(simulateResult);
    showFieldErrors(simulateForm, null);
    try {
      const got = await rest('POST', '/sandbox/{account}/inbound-email', {
        from: simulateFrom.value.trim(), to: simulateTo.value, subject: simulateSubject.value, text: simulateText.value,
      });
      mount(simulateResult, notice('success', 'Received: ', threadLink(got.thread_id, 'open its thread'), '.'));
      announce('Email received.');
      simulateSubject.value = '';
      simulateText.value = '';
      if (inboxAddress.value === simulateTo.value) {
        state.inboxPage = 0;
        loadInbox();
      }
    } catch (err) {
      if (err.fields) showFieldErrors(simulateForm, err.fields);
      mount(simulateResult, errorBox(err));
    } finally {
      submit.disabled = false;
    }
  });

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
    section('Inbox', inboxControls, inboxBox),
    section('Send an email', sendHint, sendForm),
    section('Simulate a received email', simulateForm),
    section('Sent emails', h('div', { class: 'actions' }, button('Refresh', () => loadSent())), sentBox),
    section('Sandbox mailbox', h('div', { class: 'actions' }, button('Refresh', () => loadMailbox())), mailboxBox));
  showAddresses();
  await Promise.all([loadInbox(), loadSent(), loadMailbox()]);
  return () => { stopped = true; };
}

// renderThread shows an email thread, oldest first, and answers its
// newest received email (or its newest email).
async function renderThread(root, threadId) {
  const box = h('div');
  const back = h('a', {
    href: '/dashboard/email', class: 'back',
    onclick: (e) => { if (e.button === 0 && !e.metaKey && !e.ctrlKey) { e.preventDefault(); navigate('/dashboard/email'); } },
  }, '← Email');
  const title = h('h2', { id: 'email-thread-title' }, 'Email thread');
  let answering = null;

  const text = h('textarea', { name: 'body', rows: 4, required: true });
  const hint = h('p', { class: 'hint' });
  const result = h('div', { 'aria-live': 'polite' });
  const replyForm = h('form', { class: 'reply-email', novalidate: true },
    field('Your reply', text), hint,
    h('div', { class: 'actions' }, h('button', { type: 'submit' }, 'Send reply')),
    result);
  replyForm.addEventListener('submit', async (e) => {
    e.preventDefault();
    if (!text.value.trim()) {
      showFieldErrors(replyForm, { body: ['Write something to send.'] });
      return;
    }
    const submit = replyForm.querySelector('button[type="submit"]');
    submit.disabled = true;
    mount(result);
    showFieldErrors(replyForm, null);
    try {
      await graphql(replyMutation, { input: { emailId: answering.id, body: text.value } });
      text.value = '';
      mount(result, notice('success', 'Reply queued.'));
      announce('Reply queued.');
      await load();
    } catch (err) {
      if (err.fields) showFieldErrors(replyForm, err.fields);
      mount(result, errorBox(err));
    } finally {
      submit.disabled = false;
    }
  });

  async function load() {
    box.setAttribute('aria-busy', 'true');
    try {
      const thread = (await graphql(threadQuery, { id: threadId })).emailThread;
      if (!thread) {
        mount(box, notice('error', 'No such email thread in this account.'));
        replyForm.hidden = true;
        return;
      }
      title.textContent = thread.subject || '(no subject)';
      const received = thread.emails.filter((m) => m.direction === 'INBOUND');
      answering = received.length ? received[received.length - 1] : thread.emails[thread.emails.length - 1];
      mount(hint, answering.direction === 'INBOUND'
        ? `Sent from ${answering.mailbox} to ${answering.from}, answering their email of ${new Date(answering.createdAt).toLocaleString()}.`
        : `Sent from ${answering.mailbox} to ${answering.toList.map((t) => t.address).join(', ')}.`);
      mount(box, h('ol', { class: 'email-thread', 'aria-label': 'Emails, oldest first' }, thread.emails.map(threadEmail)));
    } catch (err) {
      mount(box, errorBox(err, load));
    } finally {
      box.removeAttribute('aria-busy');
    }
  }

  append(root,
    h('div', { class: 'page-head' }, back),
    h('section', { class: 'panel', 'aria-labelledby': title.id }, title, h('p', null, h('code', null, threadId))),
    section('Emails', box),
    section('Reply', replyForm));
  await load();
}

// threadEmail is one email of a thread: who wrote to whom and when, its
// status, the reply extracted from a received one (the whole text and
// the HTML source behind disclosures), and its attachments.
function threadEmail(m) {
  const inbound = m.direction === 'INBOUND';
  const facts = h('dl', { class: 'facts' },
    h('dt', null, 'From'), h('dd', { class: 'from' }, sender(m)),
    h('dt', null, 'To'), h('dd', null, m.toList.map((t) => (t.name ? `${t.name} <${t.address}>` : t.address)).join(', ')),
    m.cc.length ? [h('dt', null, 'Cc'), h('dd', null, m.cc.join(', '))] : null,
    h('dt', null, 'Date'), h('dd', null, time(m.createdAt)),
    h('dt', null, 'Status'), h('dd', null, badge(m.status), m.failureCode ? [' ', h('code', null, m.failureCode)] : null,
      m.smtpReply && !inbound ? [' ', h('span', { class: 'muted reply' }, excerpt(m.smtpReply, 160))] : null),
    inbound && m.authentication
      ? [h('dt', null, 'Checks'), h('dd', { class: 'checks' },
        `SPF ${m.authentication.spf}, DKIM ${m.authentication.dkim}, DMARC ${m.authentication.dmarc}`,
        m.dmarcFailed ? [' ', h('span', { class: 'badge badge-failed' }, 'likely forged')] : null,
        m.authentication.reason ? h('span', { class: 'muted' }, ` (${m.authentication.reason})`) : null)]
      : null,
    m.attachments.length
      ? [h('dt', null, 'Attachments'), h('dd', { class: 'attachments' }, h('ul', null, m.attachments.map((a) => h('li', null,
        a.name || '(no name)', h('span', { class: 'muted' }, ` (${a.contentType || 'no type'}, ${byteSize(a.size)}${a.stored ? '' : ', not kept'})`)))))]
      : null);
  const shown = inbound ? (m.extractedText || m.body) : m.body;
  return h('li', { class: ['email', inbound ? 'email-inbound' : 'email-outbound', 'panel'], dataset: { id: m.id, direction: m.direction } },
    h('h3', { class: 'subject' }, badge(inbound ? 'received' : 'sent'), ' ', m.subject || '(no subject)'),
    facts,
    h('pre', { class: 'body shown', 'aria-label': inbound ? 'The reply' : 'The text' }, shown),
    inbound && m.extractedText && m.extractedText !== m.body
      ? h('details', null, h('summary', null, 'Whole text, with the quoted history'), h('pre', { class: 'body whole-text' }, m.body))
      : null,
    (inbound ? m.htmlBody : (m.html ? m.body : ''))
      ? h('details', null, h('summary', null, 'HTML part (source)'), h('pre', { class: 'body html-source' }, inbound ? m.htmlBody : m.body))
      : null);
}
