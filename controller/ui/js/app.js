// The console's entry: sign-in, the hash router, and the navigation bar. Pages live in their own
// modules; each answers a cleanup function (or nothing) that runs when the operator leaves it.

import * as api from './api.js';
import { h, fill, badge, toast } from './dom.js';
import { clustersPage, clusterPage } from './clusters.js';
import { nodesPage } from './nodes.js';
import { graphPage } from './graph.js';
import { deploymentPage } from './deployment.js';

const main = document.getElementById('main');
let cleanup = null;

function loginPage() {
  const input = h('input', { type: 'password', id: 'token', autocomplete: 'off', placeholder: 'operator token', size: 40 });
  const err = h('div', { class: 'error', id: 'login-error' });
  const form = h('form', { class: 'card login', id: 'login-form' },
    h('h1', {}, 'Sign in'),
    h('p', { class: 'muted' }, 'The token is kept in this page\u2019s memory only; reloading signs you out.'),
    h('div', { class: 'row' }, input, h('button', { class: 'primary', type: 'submit', id: 'login-submit' }, 'Sign in')),
    err);
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    try {
      await api.login(input.value.trim());
      input.value = '';
      showNav();
      const next = sessionStorage.getItem('plinth-next');
      sessionStorage.removeItem('plinth-next');
      location.hash = next && next !== '#/login' ? next : '#/clusters';
      route();
    } catch (e2) {
      err.textContent = e2.status === 401 ? 'That token is unknown or revoked.' : `Sign-in failed: ${e2.message}`;
    }
  });
  fill(main, form);
  input.focus();
}

function showNav() {
  document.getElementById('nav').hidden = !api.signedIn();
  document.getElementById('logout').hidden = !api.signedIn();
  const who = document.getElementById('who');
  fill(who, api.signedIn() ? ['signed in: ', badge(api.currentRole())] : '');
}

async function deploymentsPage() {
  fill(main, h('h1', {}, 'Deployments'), h('p', { class: 'muted' }, 'Loading\u2026'));
  const deps = await api.get('/deployments');
  deps.sort((a, b) => b.id - a.id);
  fill(main, h('h1', {}, 'Deployments'),
    h('table', { id: 'deployments' },
      h('tr', {}, ['Id', 'Cluster', 'Graph type', 'Status', 'Nodes', 'Started'].map((t) => h('th', {}, t))),
      deps.map((d) => h('tr', {},
        h('td', {}, h('a', { href: `#/deployment/${d.id}` }, `#${d.id}`)),
        h('td', {}, h('a', { href: `#/cluster/${d.cluster_id}` }, d.cluster_id)),
        h('td', {}, d.graph_type),
        h('td', {}, badge(d.status)),
        h('td', {}, (d.node_ids || []).length),
        h('td', {}, new Date(d.created_at_ms).toLocaleString())))));
}

const routes = [
  [/^#\/clusters$/, () => clustersPage(main)],
  [/^#\/cluster\/(\d+)$/, (m) => clusterPage(main, Number(m[1]))],
  [/^#\/cluster\/(\d+)\/graph(?:\/([\w-]+))?$/, (m) => graphPage(main, Number(m[1]), m[2] || 'default')],
  [/^#\/nodes(?:\?(.*))?$/, (m) => nodesPage(main, new URLSearchParams(m[1] || ''))],
  [/^#\/deployments$/, () => deploymentsPage()],
  [/^#\/deployment\/(\d+)$/, (m) => deploymentPage(main, Number(m[1]))],
];

async function route() {
  if (cleanup) { try { cleanup(); } catch (_) { /* page already gone */ } cleanup = null; }
  const hash = location.hash || '#/clusters';
  if (!api.signedIn()) {
    if (hash !== '#/login') sessionStorage.setItem('plinth-next', hash);
    loginPage();
    return;
  }
  for (const [re, page] of routes) {
    const m = hash.match(re);
    if (!m) continue;
    try {
      cleanup = (await page(m)) || null;
    } catch (e) {
      if (e.status === 401) { api.logout(); showNav(); loginPage(); return; }
      fill(main, h('h1', {}, 'Error'), h('div', { class: 'error' }, e.message));
    }
    return;
  }
  location.hash = '#/clusters';
}

document.getElementById('logout').addEventListener('click', () => {
  api.logout();
  showNav();
  location.hash = '#/login';
  route();
});
window.addEventListener('hashchange', route);
// Errors are shown, and kept for the tests to read.
window.plinthErrors = [];
const report = (what) => { window.plinthErrors.push(String(what)); toast(String(what)); };
window.addEventListener('unhandledrejection', (e) => report(e.reason?.message || e.reason));
window.addEventListener('error', (e) => report(e.message));
document.addEventListener('securitypolicyviolation', (e) => report(`blocked by the page's policy: ${e.violatedDirective} ${e.blockedURI}`));
route();
