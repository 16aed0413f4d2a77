// A deployment, live: groups in dependency order with their criteria and state, every node's phase and
// progress, failures with their output, and the event log, all refreshed from the event stream (SSE)
// without reloading; the final report when it ends; cancel with an operator token.

import * as api from './api.js';
import { h, fill, badge, toast } from './dom.js';
import { vlist } from './vlist.js';
import { criteria } from './clusters.js';

const MAX_EVENTS = 200;

/** `#/deployment/ID`. */
export async function deploymentPage(main, id) {
  const t0 = performance.now();
  let summary = await api.get(`/deployments/${id}/summary`);
  let groupRules = new Map();
  if (summary.strategy) {
    try {
      const v = await api.get(`/clusters/${summary.cluster_id}/strategies/${encodeURIComponent(summary.strategy)}/check`);
      groupRules = new Map(v.check.groups.map((g) => [g.name, g]));
    } catch (_) { /* the strategy may have changed since; criteria are then left out */ }
  }
  const headBox = h('div', { id: 'dep-head' });
  const groupsBox = h('div', { class: 'groups', id: 'groups' });
  const finalBox = h('div', { id: 'final-report' });
  const nodeBox = h('div', { id: 'dep-node' });
  const events = h('div', { class: 'events', id: 'events' });
  const statusFilter = h('select', { id: 'dep-filter' }, h('option', { value: '' }, 'all nodes'));
  const listBox = h('div', { id: 'dep-nodes' });
  const live = h('span', { id: 'live', class: 'badge' }, 'connecting');
  fill(main, headBox, finalBox, h('h2', {}, 'Groups ', h('span', { class: 'muted' }, '(dependency order)')), groupsBox,
    h('h2', {}, 'Nodes ', statusFilter, ' ', live),
    h('div', { class: 'split' },
      h('div', {}, h('div', { class: 'vhead dep-grid' }, ['Id', 'Node', 'Status', 'Phase', 'Progress', 'Task', 'Reason'].map((t) => h('span', {}, t))), listBox),
      nodeBox),
    h('h2', {}, 'Events'), events);

  let selected = null;
  const nodes = vlist(listBox, {
    rowClass: 'dep-grid',
    render: (n) => {
      const bar = h('span', {});
      bar.style.width = `${n.total_tasks ? Math.round((100 * n.finished_tasks) / n.total_tasks) : 0}%`;
      return [h('span', {}, n.id), h('span', { class: 'dep-node-name' }, n.name), h('span', {}, badge(n.status)),
        h('span', {}, n.phase ?? ''), h('span', {}, h('div', { class: 'bar' }, bar), ` ${n.finished_tasks}/${n.total_tasks}`),
        h('span', {}, n.last_task ?? ''), h('span', { class: 'error' }, n.reason ?? '')];
    },
    onClick: (n) => { selected = n.id; showNode(nodeBox, id, n.id); },
  });
  statusFilter.addEventListener('change', () => draw());

  function draw() {
    const t = performance.now();
    const running = summary.status === 'running';
    // Two steps (no modal dialog): the first click asks, the second cancels.
    const cancel = h('button', { class: 'danger', id: 'dep-cancel', disabled: !running || !api.canAct(), onclick: async () => {
      if (!cancel.dataset.armed) { cancel.dataset.armed = '1'; cancel.textContent = `Really cancel #${id}?`; return; }
      try { const r = await api.post(`/deployments/${id}/cancel`); toast(`Deployment ${id}: ${r.status}`); await refresh(); } catch (e) { toast(e.message); }
    } }, 'Cancel');
    const counts = Object.entries(summary.counts).map(([k, v]) => [badge(k), ` ${v}  `]);
    fill(headBox, h('h1', {}, `Deployment #${id} `, h('span', { id: 'dep-status' }, badge(summary.status))),
      h('div', { class: 'row' }, h('a', { href: `#/cluster/${summary.cluster_id}` }, `cluster #${summary.cluster_id}`),
        h('span', {}, `graph type ${summary.graph_type}`), summary.strategy ? h('span', {}, `strategy ${summary.strategy}`) : null,
        h('span', {}, `phases: ${summary.phases.join(' \u2192 ')}`), h('span', { id: 'dep-counts' }, counts), cancel));
    const byName = new Map(summary.groups.map((g) => [g.name, g]));
    const ordered = [...summary.order.map((n) => byName.get(n)).filter(Boolean), ...summary.groups.filter((g) => !summary.order.includes(g.name))];
    fill(groupsBox, ordered.map((g) => {
      const rule = groupRules.get(g.name);
      const bar = h('span', {});
      bar.style.width = `${g.nodes ? Math.round((100 * (g.succeeded + g.failed)) / g.nodes) : 0}%`;
      return h('div', { class: 'group', dataset: { group: g.name, state: g.state } },
        h('b', {}, g.name), ' ', badge(g.state), g.critical ? h('span', { class: 'muted' }, ' critical') : null,
        g.current_phase ? h('div', {}, `phase ${g.current_phase}`) : null,
        rule?.depends_on?.length ? h('div', { class: 'muted' }, `after ${rule.depends_on.join(', ')}`) : null,
        rule?.success_criteria ? h('div', { class: 'muted' }, criteria(rule.success_criteria)) : null,
        h('div', { class: 'bar' }, bar),
        h('div', { class: 'muted' }, `${g.succeeded} ok, ${g.prepared} prepared, ${g.failed} failed, ${g.not_started} not started of ${g.nodes}`),
        g.reason ? h('div', { class: 'error' }, g.reason) : null);
    }));
    const statuses = Object.keys(summary.counts);
    const want = statusFilter.value;
    fill(statusFilter, h('option', { value: '' }, 'all nodes'), statuses.map((s) => h('option', { value: s, selected: s === want }, s)));
    nodes.set(want ? summary.nodes.filter((n) => n.status === want) : summary.nodes);
    // The pre-deployment checks' warnings, why it stopped, refused results: shown while it runs too.
    const notices = summary.notices.length ? h('div', { id: 'notices' }, h('h3', {}, 'Checks and notices'),
      summary.notices.map((n) => h('div', { class: 'notice' }, badge(n.event), ` ${n.code ? `${n.code}: ` : ''}${n.message ?? n.reason ?? ''}`))) : null;
    if (summary.status !== 'running') {
      fill(finalBox, h('div', { class: 'card', id: 'final' }, h('h2', {}, 'Final report'),
        h('p', {}, badge(summary.status), summary.finished_at_ms ? ` finished ${new Date(summary.finished_at_ms).toLocaleString()}, after ${Math.round((summary.finished_at_ms - summary.created_at_ms) / 1000)} s` : ''),
        h('p', {}, Object.entries(summary.counts).map(([k, v]) => `${v} ${k}`).join(', ')),
        notices,
        summary.unselected_nodes.length ? h('p', { class: 'muted' }, `Not selected by any group: ${summary.unselected_nodes.join(', ')}`) : null));
    } else {
      fill(finalBox, notices ? h('div', { class: 'card' }, notices) : '');
    }
    (window.plinthDrawMs ||= []).push(performance.now() - t);
  }

  let busy = false, again = false, timer = null;
  async function refresh() {
    if (busy) { again = true; return; }
    busy = true;
    try {
      const t = performance.now();
      summary = await api.get(`/deployments/${id}/summary`);
      draw();
      (window.plinthRefreshMs ||= []).push(performance.now() - t);
      if (selected !== null) showNode(nodeBox, id, selected);
    } finally {
      busy = false;
      if (again) { again = false; schedule(); }
    }
  }
  // Bursts of events become one refresh at most every 300 ms.
  const schedule = () => { if (!timer) timer = setTimeout(() => { timer = null; refresh().catch(() => {}); }, 300); };

  draw();
  window.plinthDeploymentFirstRenderMs = performance.now() - t0;
  const addEvent = (kind, e) => {
    const text = kind === 'task_result' ? `${e.node} ${e.task} ${e.status}${e.last ? '' : ' (partial)'}` : `${e.node ?? e.group ?? ''} ${e.phase ?? ''} ${e.message ?? e.reason ?? e.status ?? ''}`;
    events.prepend(h('div', { class: 'event', dataset: { kind } }, `${new Date().toLocaleTimeString()} ${kind} ${text}`));
    while (events.childElementCount > MAX_EVENTS) events.lastChild.remove();
  };
  const feed = summary.status === 'running' ? api.stream(`/deployments/${id}/events`, (kind, e) => {
    live.textContent = 'live';
    addEvent(kind, e);
    schedule();
  }, () => { live.textContent = 'ended'; refresh().catch(() => {}); }) : null;
  if (!feed) live.textContent = 'finished';
  return () => { if (feed) feed.stop(); clearTimeout(timer); };
}

async function showNode(box, dep, nodeId) {
  const n = await api.get(`/deployments/${dep}/nodes/${nodeId}`);
  fill(box, h('div', { class: 'card', dataset: { node: n.name } },
    h('h2', {}, n.name, ' ', badge(n.status)),
    n.reason ? h('div', { class: 'error', id: 'node-reason' }, n.reason) : null,
    h('table', { id: 'node-tasks' },
      h('tr', {}, ['Phase', 'Task', 'Status', 'Exit', 'Tries', 'ms'].map((t) => h('th', {}, t))),
      n.tasks.map((t) => [h('tr', { dataset: { task: t.id } }, h('td', {}, t.phase), h('td', {}, t.id), h('td', {}, badge(t.status)),
        h('td', {}, t.exit_code ?? ''), h('td', {}, t.attempts), h('td', {}, t.duration_ms)),
      (t.stdout_tail || t.stderr_tail || t.message) && t.status !== 'succeeded' && t.status !== 'skipped'
        ? h('tr', {}, h('td', { colspan: 6 }, t.message ? h('div', {}, t.message) : null,
          t.stdout_tail ? h('pre', { class: 'stdout' }, t.stdout_tail) : null,
          t.stderr_tail ? h('pre', { class: 'stderr' }, t.stderr_tail) : null)) : null]))));
}
