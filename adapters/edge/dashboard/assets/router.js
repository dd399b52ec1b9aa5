// The console's router (app.js is its entry). It reads the page's name from
// <body data-page>, imports that page's module (./<page>.js) and lets it
// render into <div id="app">, with a loading state meanwhile and an
// error state (with "Try again") when it fails.
//
// A page module exports
//
//   export async function render(root, ctx) { … }
//
// root is the (emptied) #app element; ctx is {page, path, rest, params,
// accountId}: rest is the part of the path after /dashboard/<page>/
// (e.g. "thr_…" on /dashboard/threads/thr_…), params the query string.
// render may return a function that cleans up (subscriptions); it runs
// before the page renders again.
//
// The sign-in and error pages load this script too: it does nothing
// there but focus the field to correct after a refused sign-in.

import { accountId } from './api.js';
import { errorBox, loading, mount } from './dom.js';

// The pages this script knows; the server renders the shell for the same
// names (adapters/edge/dashboard/pages.go).
const modules = {
  overview: () => import('./overview.js'),
  threads: () => import('./threads.js'),
  webhook: () => import('./webhook.js'),
  cron: () => import('./cron.js'),
  email: () => import('./email.js'),
};

let cleanup = null;

// rendered is the path and query of the page on screen: a move to a
// fragment (the "Skip to content" link, #main) fires popstate too, and
// must not render the page again under the reader.
let rendered = null;
const where = () => location.pathname + location.search;

function context(page) {
  const base = page === 'overview' ? '/dashboard/' : `/dashboard/${page}/`;
  let rest = location.pathname.startsWith(base) ? location.pathname.slice(base.length) : '';
  rest = rest.replace(/\/+$/, '');
  return { page, path: location.pathname, rest: decodeURIComponent(rest), params: new URLSearchParams(location.search), accountId };
}

/** start renders the current page into #app (again). */
export async function start() {
  const root = document.getElementById('app');
  const page = document.body.dataset.page;
  if (!root || !modules[page]) {
    // The sign-in form after a refusal: the key is kept, so the secret
    // is what to type again.
    const key = document.getElementById('api_key');
    const invalid = key && key.value && key.getAttribute('aria-invalid') === 'true'
      ? document.getElementById('api_secret') : document.querySelector('[aria-invalid="true"]');
    if (invalid) invalid.focus();
    return;
  }
  if (cleanup) {
    try {
      cleanup();
    } catch (e) {
      console.error(e);
    }
    cleanup = null;
  }
  rendered = where();
  root.setAttribute('aria-busy', 'true');
  delete root.dataset.ready;
  mount(root, loading());
  try {
    let mod;
    try {
      mod = await modules[page]();
    } catch (e) {
      console.error(e);
      throw new Error('This page could not be loaded: its script is missing or broken. Reload to try again.');
    }
    const view = document.createElement('div');
    view.className = 'page page-' + page;
    const done = await mod.render(view, context(page));
    if (typeof done === 'function') cleanup = done;
    mount(root, view);
    root.dataset.ready = 'true';
  } catch (e) {
    console.error(e);
    mount(root, errorBox(e, () => start()));
    root.dataset.ready = 'error';
  } finally {
    root.removeAttribute('aria-busy');
  }
}

/**
 * navigate moves within the current page to path (e.g. from the thread
 * list to a thread) without loading the document again, and renders.
 */
export function navigate(path) {
  history.pushState(null, '', path);
  return start();
}

/**
 * replace changes the address of the page on screen to path (a page's
 * own state, e.g. its filter in the query) without rendering it again.
 */
export function replace(path) {
  history.replaceState(null, '', path);
  rendered = where();
}

let booted = false;

/** boot starts the console once the document is parsed. */
export function boot() {
  if (booted) return;
  booted = true;
  window.addEventListener('popstate', () => {
    if (where() !== rendered) start();
  });
  if (document.readyState === 'loading') {
    document.addEventListener('DOMContentLoaded', () => start());
  } else {
    start();
  }
}
