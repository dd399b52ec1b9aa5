// Live updates: GraphQL subscriptions over the WebSocket at /graphql.
//
// The protocol is graphql-transport-ws, spoken by the graphql-ws client
// (vendored, unmodified, in vendor/graphql-ws; MIT). The browser sends
// the session cookie with the upgrade, and the server accepts it in place
// of credentials in connection_init (from the dashboard's own origin), so
// the payload is empty. One socket carries every subscription of the
// page; it reconnects by itself (with back-off) after the server or the
// network went away, and pages hear of it (onReconnect) to fetch what
// they missed meanwhile. A 4403 close (the session ended) is not retried:
// the page checks the session, which sends the browser to sign in.

import { createClient } from './vendor/graphql-ws/client.js';
import { graphql } from './api.js';

const statusListeners = new Set();
const reconnectListeners = new Set();
let client = null;
let status = 'idle';
let everConnected = false;

function setStatus(s) {
  status = s;
  for (const fn of statusListeners) fn(s);
}

const forbidden = 4403;

function getClient() {
  if (client) return client;
  const scheme = location.protocol === 'https:' ? 'wss:' : 'ws:';
  client = createClient({
    url: `${scheme}//${location.host}/graphql`,
    connectionParams: {},
    lazy: true,
    retryAttempts: Infinity,
    retryWait: async (retries) => {
      await new Promise((resolve) => setTimeout(resolve, Math.min(500 * 2 ** retries, 5000)));
    },
    shouldRetry: (e) => !(e && e.code === forbidden),
    on: {
      connecting: (reconnecting) => setStatus(reconnecting || everConnected ? 'reconnecting' : 'connecting'),
      connected: () => {
        const again = everConnected;
        everConnected = true;
        setStatus('live');
        if (again) {
          for (const fn of reconnectListeners) fn();
        }
      },
      closed: (event) => {
        if (event && event.code === forbidden) {
          setStatus('ended');
          // The session has ended (or its key was revoked): asking
          // anything of the API now answers 401, which signs in again.
          graphql('query Session { account { id } }').catch(() => {});
        } else if (status === 'live') {
          setStatus('reconnecting');
        }
      },
    },
  });
  return client;
}

/**
 * subscribe starts a subscription: onData(data) gets each event's data,
 * onError(err) an error the server sent for it (a GraphQL error list or
 * a close event). Returns a function that stops it.
 */
export function subscribe(query, variables, onData, onError = (err) => console.error('subscription', err)) {
  return getClient().subscribe({ query, variables }, {
    next: (result) => {
      if (result.errors && result.errors.length) onError(result.errors);
      else if (result.data) onData(result.data);
    },
    error: onError,
    complete: () => {},
  });
}

/**
 * onReconnect calls fn after the socket came back from a break (not on
 * the first connection): subscriptions resume, but what happened in
 * between must be fetched again. Returns a function that stops it.
 */
export function onReconnect(fn) {
  reconnectListeners.add(fn);
  return () => reconnectListeners.delete(fn);
}

/**
 * indicator is an element that shows whether the page is live: "Live",
 * "Connecting…", "Reconnecting…" (with data-status for tests and
 * styles).
 */
export function indicator() {
  const el = document.createElement('p');
  el.className = 'live-indicator';
  el.setAttribute('role', 'status');
  const words = {
    idle: 'Connecting…', connecting: 'Connecting…', live: 'Live',
    reconnecting: 'Reconnecting…', ended: 'Session ended',
  };
  const show = (s) => {
    el.dataset.status = s;
    el.textContent = words[s] || s;
  };
  show(status);
  statusListeners.add(show);
  return el;
}
