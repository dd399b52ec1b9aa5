// The console's way to the public APIs: /graphql and /v1, with the
// session cookie (credentials: 'same-origin') and, on every request that
// may change something, the session's CSRF token in X-CSRF-Token (from
// <meta name="csrf-token">). The console has no other way to the data.
//
// Failures come back as ApiError, with the API's own message, code and
// per-field messages. Three kinds are handled here for every page:
//   - 401 (the session ended): the browser goes to sign in, and comes
//     back to this page after.
//   - 503 or no answer at all (the database or the server away): a
//     banner says so; reads wait and retry until the API answers again,
//     then the banner goes. A change (a mutation, a POST) is not retried,
//     since it may have been done: it fails with the banner up, and the
//     banner goes by itself once the API answers again.

const csrfToken = metaContent('csrf-token');

/** accountId is the signed-in account's id, from the page. */
export const accountId = metaContent('account-id');

function metaContent(name) {
  const el = document.querySelector(`meta[name="${name}"]`);
  return el ? el.getAttribute('content') || '' : '';
}

/** ApiError is a refusal or failure, as the API described it. */
export class ApiError extends Error {
  constructor(message, { status = 0, code = '', fields = null, body = null } = {}) {
    super(message || 'The request failed.');
    this.name = 'ApiError';
    this.status = status;
    this.code = code;
    // {field: [messages]} for validation errors, else null.
    this.fields = fields;
    this.body = body;
  }
}

// ---- the outage banner ------------------------------------------------

const listeners = new Set();
let down = false;
let probing = null;

/**
 * onConnectivity calls fn(up) whenever the API goes away (false) or comes
 * back (true); returns a function that stops it. Pages may use it to
 * refresh what they show.
 */
export function onConnectivity(fn) {
  listeners.add(fn);
  return () => listeners.delete(fn);
}

/** isDown reports whether the API is away right now. */
export function isDown() {
  return down;
}

function banner() {
  let el = document.getElementById('outage');
  if (!el) {
    el = document.createElement('div');
    el.id = 'outage';
    el.className = 'outage-banner';
    el.setAttribute('role', 'alert');
    el.hidden = true;
    document.body.prepend(el);
  }
  return el;
}

function markDown(reason) {
  const el = banner();
  el.textContent = reason === 'network'
    ? 'Switchboard is not answering (the server may be restarting). Retrying…'
    : 'Switchboard cannot reach its database right now. Retrying…';
  el.hidden = false;
  document.body.classList.add('api-down');
  if (!down) {
    down = true;
    for (const fn of listeners) fn(false);
  }
  startProbe();
}

function markUp() {
  if (!down) return;
  down = false;
  const el = banner();
  el.hidden = true;
  el.textContent = '';
  document.body.classList.remove('api-down');
  for (const fn of listeners) fn(true);
}

// retryDelay is the wait before the nth retry: 0.5 s doubling to 5 s.
function retryDelay(n) {
  return Math.min(500 * 2 ** n, 5000);
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// startProbe asks the API, cheaply, until it answers, then lifts the
// banner: so a failed change does not leave it up for good.
function startProbe() {
  if (probing) return;
  probing = (async () => {
    for (let n = 0; down; n++) {
      await sleep(retryDelay(n));
      try {
        const res = await send('/graphql', 'POST', { query: 'query Probe { account { id } }' });
        if (res.status !== 503 && res.status < 500) markUp();
      } catch {
        // still away
      }
    }
    probing = null;
  })();
}

// ---- requests ---------------------------------------------------------

function send(url, method, body) {
  const headers = { Accept: 'application/json' };
  if (method !== 'GET' && method !== 'HEAD') {
    headers['X-CSRF-Token'] = csrfToken;
  }
  const init = { method, headers, credentials: 'same-origin', cache: 'no-store' };
  if (body !== undefined) {
    headers['Content-Type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  return fetch(url, init);
}

function toSignIn() {
  const next = location.pathname;
  location.assign('/dashboard/sign-in' + (next && next !== '/dashboard/' ? '?next=' + encodeURIComponent(next) : ''));
}

async function readJSON(res) {
  const text = await res.text();
  if (!text) return null;
  try {
    return JSON.parse(text);
  } catch {
    return { message: text.slice(0, 300) };
  }
}

// restError turns the three REST error shapes (FastAPI's detail list,
// {detail, message, code} and the cron routes' {error: {code, message,
// details}}) into an ApiError.
function restError(res, body) {
  body = body || {};
  let message = '';
  let code = '';
  let fields = null;
  if (body.error && typeof body.error === 'object') {
    message = body.error.message;
    code = body.error.code;
    fields = body.error.details || null;
  } else if (Array.isArray(body.detail)) {
    fields = {};
    const parts = [];
    for (const d of body.detail) {
      const name = Array.isArray(d.loc) ? String(d.loc[d.loc.length - 1]) : '';
      (fields[name] = fields[name] || []).push(d.msg);
      parts.push(name ? `${name}: ${d.msg}` : d.msg);
    }
    message = parts.join('; ');
    code = 'validation_error';
  } else {
    message = body.message || (typeof body.detail === 'string' ? body.detail : '');
    code = body.code || '';
  }
  return new ApiError(message || `${res.status} ${res.statusText}`, { status: res.status, code, fields, body });
}

// call sends one request and deals with what every page deals alike:
// a read is retried through an outage; a 401 signs in again.
async function call(url, method, body, { retry, parse }) {
  for (let n = 0; ; n++) {
    let res;
    try {
      res = await send(url, method, body);
    } catch (e) {
      markDown('network');
      if (!retry) throw new ApiError('Switchboard did not answer; nothing is known to have changed. Try again once it is back.', { code: 'network_error' });
      await sleep(retryDelay(n));
      continue;
    }
    if (res.status === 401) {
      toSignIn();
      throw new ApiError('Your session has ended; sign in again.', { status: 401, code: 'unauthorized' });
    }
    const json = await readJSON(res);
    const outcome = parse(res, json);
    if (outcome.unavailable) {
      markDown('database');
      if (!retry) throw outcome.error;
      await sleep(retryDelay(n));
      continue;
    }
    markUp();
    if (outcome.error) throw outcome.error;
    return outcome.data;
  }
}

// gqlFields turns GraphQL's extensions.fields ([{path, message, type}])
// into {field: [messages]}, the field being the path's last name.
function gqlFields(list) {
  if (!Array.isArray(list) || list.length === 0) return null;
  const out = {};
  for (const f of list) {
    const names = (f.path || []).filter((p) => typeof p === 'string');
    const name = names.length ? names[names.length - 1] : '';
    (out[name] = out[name] || []).push(f.message);
  }
  return out;
}

/**
 * graphql runs an operation on /graphql and returns its data. The first
 * error (with extensions.code and .fields) becomes an ApiError. Queries
 * wait through an outage; mutations fail at once.
 */
export function graphql(query, variables = {}) {
  const mutation = /^\s*mutation\b/.test(query);
  return call('/graphql', 'POST', { query, variables }, {
    retry: !mutation,
    parse(res, json) {
      const errs = json && Array.isArray(json.errors) ? json.errors : [];
      const first = errs[0];
      const ext = (first && first.extensions) || {};
      if (res.status === 503 || ext.code === 'unavailable') {
        return { unavailable: true, error: new ApiError(first ? first.message : 'Switchboard cannot reach its database.', { status: 503, code: 'unavailable' }) };
      }
      if (!res.ok && !first) return { error: restError(res, json) };
      if (first) {
        if (ext.code === 'unauthorized' || ext.code === 'unauthenticated') {
          toSignIn();
        }
        return { error: new ApiError(first.message, { status: res.status, code: ext.code || '', fields: gqlFields(ext.fields), body: json }) };
      }
      return { data: json ? json.data : null };
    },
  });
}

/**
 * rest calls /v1<path> (path starts with a slash; {account} in it is the
 * signed-in account's id) and returns the decoded JSON. GETs wait
 * through an outage; other methods fail at once.
 */
export function rest(method, path, body) {
  const url = '/v1' + path.replaceAll('{account}', encodeURIComponent(accountId));
  return call(url, method, body, {
    retry: method === 'GET',
    parse(res, json) {
      if (res.status === 503) return { unavailable: true, error: restError(res, json) };
      if (!res.ok) return { error: restError(res, json) };
      return { data: json };
    },
  });
}
