// The Cron page: the account's cron jobs with their status and next run;
// create and edit (the API's own validation messages beside the fields
// they name), pause, resume and delete (after a confirmation); and each
// job's executions, paged.
//
// Everything goes through the REST cron routes (/v1/cron-jobs…), with
// the session: the same rules and messages as for a script. Endpoints,
// headers, bodies and responses are shown as text only (dom.js).

import { rest } from './api.js';
import {
  announce, badge, button, errorBox, excerpt, field, h, mount, notice, pager, section, showFieldErrors, table, time,
} from './dom.js';

const PAGE_SIZE = 20;
const EXEC_PAGE_SIZE = 20;

const METHODS = ['GET', 'POST', 'PUT', 'DELETE'];
const FREQUENCIES = [['daily', 'Daily'], ['weekly', 'Weekly'], ['monthly', 'Monthly'], ['custom', 'Custom (cron expression)']];
const WEEKDAYS = ['Sunday', 'Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday'];

/** render is the page's entry (see router.js). */
export async function render(root, ctx) {
  useStyles();
  const state = {
    status: ['active', 'paused'].includes(ctx.params.get('status')) ? ctx.params.get('status') : '',
    offset: 0,
    list: null, // {data, meta}
    listError: null,
    // The form: null, {mode: 'create'} or {mode: 'edit', job}.
    form: null,
    // The job whose executions are shown, its details and its page.
    selected: null,
    details: null,
    execs: null,
    execOffset: 0,
    execStatus: '',
    execError: null,
    // The job whose delete awaits its confirmation.
    confirming: null,
    message: null,
    highlight: null,
  };
  let stopped = false;
  // The reload of the open job's executions once its next run is due.
  let refreshTimer = null;

  state.list = await rest('GET', jobsPath(state));

  const toolbar = h('div', { class: 'toolbar cron-toolbar' });
  const formSlot = h('div', { class: 'cron-form-slot' });
  const listSlot = h('div', { class: 'cron-list' });
  const execSlot = h('div', { class: 'cron-executions' });
  mount(root,
    h('p', { class: 'lead muted' },
      'A cron job calls your endpoint on a schedule, read on its time zone\'s wall clock. ',
      'Each run is recorded as an execution with the answer\'s status code and body.'),
    toolbar, formSlot, listSlot, execSlot);

  // ---- the toolbar ---------------------------------------------------------

  function paintToolbar() {
    const filter = h('select', { name: 'job_status' },
      [['', 'All'], ['active', 'Active'], ['paused', 'Paused']].map(([v, label]) => h('option', { value: v, selected: v === state.status }, label)));
    filter.addEventListener('change', () => {
      state.status = filter.value;
      state.offset = 0;
      loadList();
    });
    mount(toolbar,
      button('New job', () => openForm({ mode: 'create' }), { class: 'primary new-job', 'aria-expanded': state.form && state.form.mode === 'create' ? 'true' : 'false' }),
      field('Show', filter),
      button('Refresh', () => loadList(), { class: 'refresh-jobs' }));
  }

  // ---- the job list --------------------------------------------------------

  function paintList() {
    const body = [];
    if (state.message) body.push(state.message);
    if (state.listError) body.push(errorBox(state.listError, () => loadList()));
    const list = state.list;
    if (list) {
      body.push(table({
        caption: 'Cron jobs, oldest first',
        empty: state.status ? `No ${state.status} jobs.` : 'No cron jobs yet. Create one with "New job".',
        rows: list.data,
        rowProps: (j) => ({
          class: ['cron-job', j.id === state.highlight ? 'selected' : null],
          dataset: { id: j.id, status: j.status },
          'aria-current': state.selected === j.id ? 'true' : null,
        }),
        columns: [
          { label: 'Endpoint', cell: (j) => h('span', { class: 'job-endpoint' }, h('span', { class: 'job-method' }, j.method), h('code', null, j.endpoint_url), h('br'), h('span', { class: 'muted job-id' }, j.id)) },
          { label: 'Schedule', cell: (j) => h('div', null, describe(j), h('br'), h('span', { class: 'muted' }, j.timezone)) },
          { label: 'Status', cell: (j) => h('span', { class: 'job-status' }, badge(j.status)) },
          { label: 'Next run', cell: (j) => h('span', { class: 'next-run' }, j.next_execution ? time(j.next_execution) : h('span', { class: 'muted' }, j.status === 'paused' ? 'paused' : '—')) },
          { label: 'Actions', cell: actionsCell },
        ],
      }));
      const meta = list.meta;
      if (meta.total > 0) {
        body.push(pager({
          onPrev: state.offset > 0 ? () => {
            state.offset = Math.max(0, state.offset - PAGE_SIZE);
            loadList();
          } : null,
          onNext: () => {
            state.offset += PAGE_SIZE;
            loadList();
          },
          hasNext: state.offset + list.data.length < meta.total,
          status: `${state.offset + 1}–${state.offset + list.data.length} of ${meta.total}`,
        }));
      }
    }
    mount(listSlot, section('Jobs', body));
  }

  function actionsCell(j) {
    if (state.confirming === j.id) {
      const yes = button('Delete', null, { class: 'danger confirm-delete-yes' });
      const no = button('Cancel', () => {
        state.confirming = null;
        paintList();
        focusRow(j.id, 'button.delete');
      }, { class: 'confirm-delete-no' });
      yes.addEventListener('click', async () => {
        yes.disabled = true;
        no.disabled = true;
        try {
          await rest('DELETE', `/cron-jobs/${encodeURIComponent(j.id)}`);
          state.confirming = null;
          if (state.selected === j.id) closeExecutions();
          if (state.form && state.form.job && state.form.job.id === j.id) closeForm();
          state.message = notice('success', h('p', null, 'The job ', h('code', null, j.id), ' is deleted.'));
          announce('The job is deleted.');
          await loadList();
          const nb = toolbar.querySelector('.new-job');
          if (nb) nb.focus();
        } catch (err) {
          state.confirming = null;
          state.message = errorBox(err);
          paintList();
        }
      });
      queueMicrotask(() => no.focus());
      return h('div', { class: 'confirm-delete', role: 'group', 'aria-label': `Delete ${j.id}?` },
        h('p', null, 'Delete this job and its executions?'), yes, no);
    }
    const paused = j.status === 'paused';
    const toggle = button(paused ? 'Resume' : 'Pause', null, { class: paused ? 'resume' : 'pause', 'aria-label': `${paused ? 'Resume' : 'Pause'} ${j.id}` });
    toggle.addEventListener('click', async () => {
      toggle.disabled = true;
      try {
        const out = await rest('POST', `/cron-jobs/${encodeURIComponent(j.id)}/${paused ? 'resume' : 'pause'}`);
        Object.assign(j, { status: out.status, next_execution: out.next_execution });
        state.message = null;
        paintList();
        announce(out.status === 'paused' ? 'The job is paused.' : 'The job is active again.');
        focusRow(j.id, out.status === 'paused' ? 'button.resume' : 'button.pause');
        if (state.selected === j.id) loadDetails();
      } catch (err) {
        toggle.disabled = false;
        state.message = errorBox(err);
        paintList();
      }
    });
    return h('div', { class: 'actions' },
      button('Edit', () => edit(j.id), { class: 'edit', 'aria-label': `Edit ${j.id}` }),
      toggle,
      button('Executions', () => openExecutions(j.id), { class: 'executions', 'aria-label': `Executions of ${j.id}` }),
      button('Delete', () => {
        state.confirming = j.id;
        paintList();
      }, { class: 'danger delete', 'aria-label': `Delete ${j.id}` }));
  }

  function focusRow(id, selector) {
    const row = listSlot.querySelector(`tr[data-id="${CSS.escape(id)}"]`);
    const el = row && row.querySelector(selector);
    if (el) el.focus();
  }

  async function loadList() {
    try {
      state.list = await rest('GET', jobsPath(state));
      if (state.list.data.length === 0 && state.offset > 0 && state.list.meta.total > 0) {
        // The page emptied (the last job on it deleted): the one before.
        state.offset = Math.max(0, Math.floor((state.list.meta.total - 1) / PAGE_SIZE) * PAGE_SIZE);
        state.list = await rest('GET', jobsPath(state));
      }
      state.listError = null;
    } catch (err) {
      state.listError = err;
    }
    if (!stopped) paintList();
  }

  // ---- create and edit -----------------------------------------------------

  async function edit(id) {
    try {
      const job = await rest('GET', `/cron-jobs/${encodeURIComponent(id)}`);
      openForm({ mode: 'edit', job });
    } catch (err) {
      state.message = errorBox(err);
      paintList();
    }
  }

  function openForm(f) {
    state.form = f;
    paintForm();
    paintToolbar();
    const first = formSlot.querySelector('input, select, textarea');
    if (first) first.focus();
  }

  function closeForm() {
    state.form = null;
    mount(formSlot);
    paintToolbar();
  }

  function paintForm() {
    if (!state.form) {
      mount(formSlot);
      return;
    }
    const job = state.form.mode === 'edit' ? state.form.job : null;
    mount(formSlot, section(job ? `Edit ${job.id}` : 'New cron job', jobForm(job)));
  }

  function jobForm(job) {
    const v = job || {};
    const zone = defaultZone();
    const c = {
      endpoint_url: h('input', { type: 'url', name: 'endpoint_url', value: v.endpoint_url || '', spellcheck: 'false', autocomplete: 'off', placeholder: 'https://example.com/hook', inputmode: 'url' }),
      method: h('select', { name: 'method' }, METHODS.map((m) => h('option', { value: m, selected: (v.method || 'POST') === m }, m))),
      frequency: h('select', { name: 'frequency' }, FREQUENCIES.map(([f, label]) => h('option', { value: f, selected: (v.frequency || 'daily') === f }, label))),
      time: h('input', { type: 'text', name: 'time', value: v.time || '', placeholder: 'HH:MM', inputmode: 'numeric', autocomplete: 'off', spellcheck: 'false' }),
      day_of_week: h('select', { name: 'day_of_week' }, WEEKDAYS.map((d, i) => h('option', { value: String(i), selected: v.day_of_week === i }, `${d} (${i})`))),
      day_of_month: h('input', { type: 'text', name: 'day_of_month', value: v.day_of_month != null ? String(v.day_of_month) : '', inputmode: 'numeric', autocomplete: 'off', placeholder: '1-31' }),
      custom_schedule: h('input', { type: 'text', name: 'custom_schedule', value: v.custom_schedule || '', spellcheck: 'false', autocomplete: 'off', placeholder: '30 9 * * 1-5' }),
      timezone: h('input', { type: 'text', name: 'timezone', value: v.timezone || zone, list: 'cron-zones', spellcheck: 'false', autocomplete: 'off' }),
      headers: h('textarea', { name: 'headers', rows: 3, spellcheck: 'false', placeholder: 'X-Token: s3cret' }),
      body: h('textarea', { name: 'body', rows: 4, spellcheck: 'false', placeholder: '{"report": "daily"}' }),
      timeout_seconds: h('input', { type: 'text', name: 'timeout_seconds', value: v.timeout_seconds != null ? String(v.timeout_seconds) : '', inputmode: 'numeric', placeholder: '30', autocomplete: 'off' }),
      retries: h('input', { type: 'text', name: 'retries', value: v.retries != null ? String(v.retries) : '', inputmode: 'numeric', placeholder: '0', autocomplete: 'off' }),
    };
    c.headers.value = Object.entries(v.headers || {}).map(([name, value]) => `${name}: ${value}`).join('\n');
    c.body.value = v.body != null ? JSON.stringify(v.body, null, 2) : '';
    const f = {
      time: field('Time', c.time, { hint: '24-hour HH:MM, in the time zone.' }),
      day_of_week: field('Day of the week', c.day_of_week),
      day_of_month: field('Day of the month', c.day_of_month, { hint: '1 to 31; shorter months run on their last day.' }),
      custom_schedule: field('Cron expression', c.custom_schedule, { hint: 'Five fields: minute hour day-of-month month day-of-week.' }),
    };
    const showSchedule = () => {
      const freq = c.frequency.value;
      f.time.hidden = freq === 'custom';
      f.day_of_week.hidden = freq !== 'weekly';
      f.day_of_month.hidden = freq !== 'monthly';
      f.custom_schedule.hidden = freq !== 'custom';
    };
    c.frequency.addEventListener('change', showSchedule);
    showSchedule();
    const zones = h('datalist', { id: 'cron-zones' }, timeZones().map((z) => h('option', { value: z })));
    const formError = h('div', { class: 'form-error' });
    const submit = h('button', { type: 'submit' }, job ? 'Save changes' : 'Create job');
    const cancel = button('Cancel', () => {
      closeForm();
      const nb = toolbar.querySelector('.new-job');
      if (nb) nb.focus();
    }, { class: 'cancel' });
    const form = h('form', { class: 'cron-form', novalidate: true },
      formError,
      h('div', { class: 'row' },
        field('Endpoint URL', c.endpoint_url, { hint: 'Called on every run; http(s), public unless the server allows private ranges.' }),
        field('Method', c.method)),
      h('div', { class: 'row' },
        field('Frequency', c.frequency), f.time, f.day_of_week, f.day_of_month, f.custom_schedule,
        field('Time zone', c.timezone, { hint: 'An IANA name, e.g. Europe/London.' })),
      h('div', { class: 'row' },
        field('Headers', c.headers, { hint: 'One per line: Name: value.' }),
        field('Body', c.body, { hint: 'A JSON object, sent with POST and PUT.' })),
      h('div', { class: 'row' },
        field('Timeout (seconds)', c.timeout_seconds, { hint: '1 to 300; 30 when empty.' }),
        field('Retries', c.retries, { hint: '0 to 5 retries of a failed run.' })),
      zones,
      h('div', { class: 'actions' }, submit, cancel));

    form.addEventListener('submit', async (ev) => {
      ev.preventDefault();
      mount(formError);
      const { payload, problems } = readForm(c, job);
      if (problems) {
        showFieldErrors(form, problems);
        mount(formError, notice('error', h('p', null, 'Correct the fields marked below.')));
        return;
      }
      submit.disabled = true;
      try {
        const saved = job
          ? await rest('PATCH', `/cron-jobs/${encodeURIComponent(job.id)}`, payload)
          : await rest('POST', '/cron-jobs', payload);
        closeForm();
        state.highlight = saved.id;
        state.message = notice('success', h('p', null, job ? 'The job ' : 'The job ', h('code', null, saved.id), job ? ' is saved.' : ' is created.'));
        announce(job ? 'The job is saved.' : 'The job is created.');
        await loadList();
        if (!job && state.list && !state.list.data.some((j) => j.id === saved.id) && state.list.meta.total > 0) {
          // New jobs come last: show the last page.
          state.offset = Math.floor((state.list.meta.total - 1) / PAGE_SIZE) * PAGE_SIZE;
          await loadList();
        }
        if (state.selected === saved.id) loadDetails();
        focusRow(saved.id, 'button.edit');
      } catch (err) {
        submit.disabled = false;
        const fields = apiFields(err);
        const matched = fields ? showFieldErrors(form, fields) : false;
        const unmatched = fields ? Object.entries(fields).filter(([name]) => !form.querySelector(`[name="${CSS.escape(name)}"]`)) : [];
        mount(formError, notice('error',
          h('p', null, err.message || 'The job was not saved.'),
          unmatched.map(([name, msgs]) => h('p', null, name ? `${name}: ` : '', msgs.join(' '))),
          matched ? h('p', { class: 'muted' }, 'The fields concerned are marked below.') : null));
        if (!matched) formError.querySelector('.notice')?.setAttribute('tabindex', '-1');
        if (!matched) formError.querySelector('.notice')?.focus();
      }
    });
    return form;
  }

  // ---- executions ----------------------------------------------------------

  function openExecutions(id) {
    state.selected = id;
    state.details = null;
    state.execs = null;
    state.execOffset = 0;
    state.execError = null;
    paintList();
    paintExecutions();
    loadDetails();
    loadExecutions().then(() => {
      const heading = execSlot.querySelector('h2');
      if (heading) {
        heading.setAttribute('tabindex', '-1');
        heading.focus();
      }
    });
  }

  function closeExecutions() {
    clearTimeout(refreshTimer);
    refreshTimer = null;
    state.selected = null;
    state.details = null;
    state.execs = null;
    mount(execSlot);
  }

  async function loadDetails() {
    const id = state.selected;
    try {
      const d = await rest('GET', `/cron-jobs/${encodeURIComponent(id)}`);
      if (state.selected === id) state.details = d;
    } catch (err) {
      if (state.selected === id) state.execError = err;
    }
    if (!stopped && state.selected === id) {
      paintExecutions();
      scheduleRefresh();
    }
  }

  // scheduleRefresh reloads the open job's executions when its next run
  // is due (within a quarter of an hour), every 2 s until the run's
  // execution shows (20 s at most), then the job and the list: a run
  // shows up without a reload.
  function scheduleRefresh() {
    clearTimeout(refreshTimer);
    refreshTimer = null;
    const d = state.details;
    if (stopped || !d || d.id !== state.selected || d.status !== 'active' || !d.next_execution) return;
    const wait = Date.parse(d.next_execution) - Date.now();
    if (!(wait < 15 * 60_000)) return;
    const before = state.execs ? state.execs.meta.total : 0;
    let tries = 0;
    const tick = async () => {
      refreshTimer = null;
      if (stopped || state.selected !== d.id) return;
      await loadExecutions();
      tries += 1;
      if ((state.execs && state.execs.meta.total > before) || tries >= 10) {
        await loadDetails();
        if (!state.form) loadList();
        return;
      }
      refreshTimer = setTimeout(tick, 2000);
    };
    refreshTimer = setTimeout(tick, Math.max(wait, 0) + 1500);
  }

  async function loadExecutions() {
    const id = state.selected;
    if (!id) return;
    const q = new URLSearchParams({ limit: String(EXEC_PAGE_SIZE), offset: String(state.execOffset) });
    if (state.execStatus) q.set('status', state.execStatus);
    try {
      const out = await rest('GET', `/cron-jobs/${encodeURIComponent(id)}/executions?${q}`);
      if (state.selected === id) {
        state.execs = out;
        state.execError = null;
      }
    } catch (err) {
      if (state.selected === id) state.execError = err;
    }
    if (!stopped && state.selected === id) paintExecutions();
  }

  function paintExecutions() {
    const id = state.selected;
    if (!id) {
      mount(execSlot);
      return;
    }
    const body = [];
    const d = state.details;
    if (d) body.push(jobFacts(d));
    const filter = h('select', { name: 'execution_status' },
      [['', 'All'], ['success', 'Success'], ['failed', 'Failed']].map(([v, label]) => h('option', { value: v, selected: v === state.execStatus }, label)));
    filter.addEventListener('change', () => {
      state.execStatus = filter.value;
      state.execOffset = 0;
      loadExecutions();
    });
    body.push(h('div', { class: 'toolbar' }, field('Outcome', filter),
      button('Refresh', () => {
        loadDetails();
        loadExecutions();
      }, { class: 'refresh-executions' }),
      button('Close', () => {
        closeExecutions();
        paintList();
        focusRow(id, 'button.executions');
      }, { class: 'close-executions' })));
    if (state.execError) body.push(errorBox(state.execError, () => loadExecutions()));
    const ex = state.execs;
    if (!ex && !state.execError) body.push(h('p', { class: 'loading', role: 'status' }, 'Loading executions…'));
    if (ex) {
      body.push(table({
        caption: 'Executions, newest first',
        empty: state.execStatus ? `No ${state.execStatus} executions.` : 'No executions yet: the job has not run.',
        rows: ex.data,
        rowProps: (e) => ({ class: 'execution', dataset: { id: e.id, status: e.status } }),
        columns: [
          { label: 'Time', cell: (e) => h('div', null, time(e.timestamp), e.scheduled_for && e.scheduled_for !== e.timestamp ? h('span', { class: 'muted' }, h('br'), 'for ', time(e.scheduled_for)) : null) },
          { label: 'Status', cell: (e) => badge(e.status) },
          { label: 'Status code', class: 'num', cell: (e) => h('span', { class: 'status-code' }, e.response_code ? String(e.response_code) : '—') },
          { label: 'Response time', class: 'num', cell: (e) => `${e.response_time_ms} ms` },
          { label: 'Attempts', class: 'num', cell: (e) => h('span', null, String(e.attempts), e.interrupted_attempts ? h('span', { class: 'muted' }, ` (${e.interrupted_attempts} interrupted)`) : null) },
          { label: 'Body', cell: (e) => (e.response_body != null ? h('pre', { class: 'excerpt response-body' }, excerpt(bodyText(e.response_body), 500)) : h('span', { class: 'muted' }, '—')) },
          { label: 'Error', cell: (e) => (e.error ? h('span', { class: 'error execution-error' }, e.error) : h('span', { class: 'muted' }, '—')) },
        ],
      }));
      const total = ex.meta.total;
      if (total > 0) {
        body.push(pager({
          onPrev: state.execOffset > 0 ? () => {
            state.execOffset = Math.max(0, state.execOffset - EXEC_PAGE_SIZE);
            loadExecutions();
          } : null,
          onNext: () => {
            state.execOffset += EXEC_PAGE_SIZE;
            loadExecutions();
          },
          hasNext: state.execOffset + ex.data.length < total,
          prevLabel: 'Newer',
          nextLabel: 'Older',
          status: `${state.execOffset + 1}–${state.execOffset + ex.data.length} of ${total}`,
        }));
      }
    }
    mount(execSlot, section(`Executions of ${id}`, body));
  }

  function jobFacts(d) {
    const headers = Object.entries(d.headers || {});
    const facts = [
      h('dt', null, 'Endpoint'), h('dd', null, h('span', { class: 'job-method' }, d.method), h('code', null, d.endpoint_url)),
      h('dt', null, 'Schedule'), h('dd', null, describe(d), ' · ', d.timezone),
      h('dt', null, 'Status'), h('dd', null, badge(d.status), d.next_execution ? [' · next run ', time(d.next_execution)] : null),
      h('dt', null, 'Headers'), h('dd', null, headers.length
        ? h('ul', { class: 'cron-headers' }, headers.map(([name, value]) => h('li', null, h('code', null, `${name}: ${value}`))))
        : h('span', { class: 'muted' }, 'none')),
    ];
    if (d.body != null) facts.push(h('dt', null, 'Body'), h('dd', null, h('pre', { class: 'excerpt job-body' }, excerpt(JSON.stringify(d.body, null, 2), 2000))));
    facts.push(h('dt', null, 'Timeout, retries'), h('dd', null, `${d.timeout_seconds} s, ${d.retries} ${d.retries === 1 ? 'retry' : 'retries'}`));
    if (d.last_execution) {
      const l = d.last_execution;
      facts.push(h('dt', null, 'Last run'), h('dd', null, time(l.timestamp), ' · ', badge(l.status), ` · ${l.response_code || '—'} · ${l.response_time_ms} ms`));
    }
    return h('dl', { class: 'facts job-facts' }, facts);
  }

  paintToolbar();
  paintList();
  if (ctx.rest && /^crn_/.test(ctx.rest)) openExecutions(ctx.rest);
  return () => {
    stopped = true;
    clearTimeout(refreshTimer);
  };
}

function jobsPath(state) {
  const q = new URLSearchParams({ limit: String(PAGE_SIZE), offset: String(state.offset) });
  if (state.status) q.set('status', state.status);
  return `/cron-jobs?${q}`;
}

/** describe says when a job runs, in words. */
function describe(j) {
  switch (j.frequency) {
    case 'daily':
      return `Daily at ${j.time}`;
    case 'weekly':
      return `Weekly on ${WEEKDAYS[j.day_of_week] || j.day_of_week} at ${j.time}`;
    case 'monthly':
      return `Monthly on day ${j.day_of_month} at ${j.time}`;
    case 'custom':
      return h('span', null, 'Custom: ', h('code', null, j.custom_schedule || ''));
    default:
      return String(j.frequency || '');
  }
}

// readForm turns the form into the API's body. What only the browser can
// know is checked here (a header line without a colon, a body that is
// not JSON); everything else is the API's to judge, so a number field
// that is not a number goes as the text typed, and the API says why it
// is wrong. An edit sends every field: those the frequency does not use
// as null, an empty body as null (none), no header lines as {}.
function readForm(c, job) {
  const problems = {};
  const payload = {
    endpoint_url: c.endpoint_url.value.trim(),
    method: c.method.value,
    frequency: c.frequency.value,
    timezone: c.timezone.value.trim(),
  };
  const freq = payload.frequency;
  if (freq !== 'custom') payload.time = c.time.value.trim();
  if (freq === 'weekly') payload.day_of_week = Number(c.day_of_week.value);
  else if (job) payload.day_of_week = null;
  if (freq === 'monthly') payload.day_of_month = number(c.day_of_month.value);
  else if (job) payload.day_of_month = null;
  if (freq === 'custom') payload.custom_schedule = c.custom_schedule.value.trim();
  else if (job) payload.custom_schedule = null;

  const headers = {};
  const lines = c.headers.value.split('\n').map((l) => l.trim()).filter(Boolean);
  for (const line of lines) {
    const i = line.indexOf(':');
    if (i <= 0) {
      problems.headers = [`"${excerpt(line, 40)}" is not a header: write one per line as Name: value.`];
      break;
    }
    headers[line.slice(0, i).trim()] = line.slice(i + 1).trim();
  }
  if (lines.length > 0 || job) payload.headers = headers;

  const bodyText = c.body.value.trim();
  if (bodyText) {
    try {
      payload.body = JSON.parse(bodyText);
    } catch (e) {
      problems.body = [`body is not valid JSON: ${e.message}`];
    }
  } else if (job) {
    payload.body = null;
  }
  for (const name of ['timeout_seconds', 'retries']) {
    const raw = c[name].value.trim();
    if (raw !== '') payload[name] = number(raw);
  }
  return { payload, problems: Object.keys(problems).length ? problems : null };
}

// number is the integer typed, or the text itself for the API to refuse.
function number(raw) {
  const s = String(raw).trim();
  return /^-?\d+$/.test(s) ? Number(s) : s;
}

// apiFields is a refusal's per-field messages with header problems
// ("headers.X-Token") under headers, the field that holds them.
function apiFields(err) {
  if (!err || !err.fields || typeof err.fields !== 'object') return null;
  const out = {};
  for (const [name, msgs] of Object.entries(err.fields)) {
    const list = Array.isArray(msgs) ? msgs : [String(msgs)];
    const key = name.startsWith('headers.') ? 'headers' : name;
    const shown = name.startsWith('headers.') ? list.map((m) => `${name.slice(8)}: ${m}`) : list;
    out[key] = (out[key] || []).concat(shown);
  }
  return Object.keys(out).length ? out : null;
}

function bodyText(v) {
  return typeof v === 'string' ? v : JSON.stringify(v, null, 2);
}

function defaultZone() {
  try {
    const z = Intl.DateTimeFormat().resolvedOptions().timeZone;
    if (z && (z.includes('/') || z === 'UTC')) return z;
  } catch {
    // no Intl zones
  }
  return 'UTC';
}

let zoneList = null;
function timeZones() {
  if (!zoneList) {
    try {
      zoneList = typeof Intl.supportedValuesOf === 'function' ? Intl.supportedValuesOf('timeZone') : [];
    } catch {
      zoneList = [];
    }
  }
  return zoneList;
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
