// A deployment, live: groups in dependency order with their criteria, state and counts, every node's
// phase, progress (tasks succeeded of its total, a failed node marked) and the task that matters (the
// running one, else the one that failed it), failed nodes with their whole reason, each node's output,
// and the event log, all refreshed from the event stream (SSE) without reloading; the final report when
// it ends; cancel while it runs, with an operator token.

import * as api from './api.js';
import { h, fill, badge, toast } from './dom.js';
import { vlist } from './vlist.js';
import { criteria } from './clusters.js';

const MAX_EVENTS = 200;
const MAX_FAILURES = 10;

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
  const failuresBox = h('div', { id: 'dep-failures' });
  const statusFilter = h('select', { id: 'dep-filter' }, h('option', { value: '' }, 'all nodes'));
  const listBox = h('div', { id: 'dep-nodes' });
  const live = h('span', { id: 'live', class: 'badge' }, 'connecting');
  fill(main, headBox, finalBox, h('h2', {}, 'Groups ', h('span', { class: 'muted' }, '(dependency order)')), groupsBox,
    failuresBox,
    h('h2', {}, 'Nodes ', statusFilter, ' ', live),
    // The events right under the list, the node's card beside both (below the list in a narrow window).
    h('div', { class: 'split dep-split' }, listBox, nodeBox, h('div', { class: 'dep-events' }, h('h2', {}, 'Events'), events)));

  let selected = null;
  const open = (nodeId) => { selected = nodeId; showNode(nodeBox, id, nodeId); };
  const nodes = vlist(listBox, {
    head: ['Id', 'Node', 'Status', 'Phase', 'Progress', 'Task', 'Reason'],
    rowClass: 'dep-grid',
    render: (n) => [h('span', {}, n.id), h('span', { class: 'dep-node-name' }, n.name),
      h('span', { class: 'dep-node-status' }, badge(n.status)), h('span', {}, n.phase ?? ''), progress(n),
      h('span', { class: n.status === 'failure' ? 'dep-node-task failed' : 'dep-node-task' }, taskOf(n) ?? ''),
      h('span', { class: 'error dep-node-reason' }, n.reason ?? '')],
    onClick: (n) => open(n.id),
  });
  statusFilter.addEventListener('change', () => draw());

  function draw() {
    const t = performance.now();
    const running = summary.status === 'running';
    // Two steps (no modal dialog): the first click asks, the second cancels.
    // Only while it runs: a finished deployment has nothing to cancel. A read-only token sees it disabled.
    const cancel = running ? h('button', { class: 'danger', id: 'dep-cancel', disabled: !api.canAct(), onclick: async () => {
      if (!cancel.dataset.armed) { cancel.dataset.armed = '1'; cancel.textContent = `Really cancel #${id}?`; return; }
      try { const r = await api.post(`/deployments/${id}/cancel`); toast(`Deployment ${id}: ${r.status}`); await refresh(); } catch (e) { toast(e.message); }
    } }, 'Cancel') : null;
    const counts = Object.entries(summary.counts).map(([k, v]) => h('span', { class: 'count', dataset: { status: k } }, badge(k), ` ${v}`));
    fill(headBox, h('h1', {}, `Deployment #${id} `, h('span', { id: 'dep-status' }, badge(summary.status))),
      h('div', { class: 'row' }, h('a', { href: `#/cluster/${summary.cluster_id}` }, `cluster #${summary.cluster_id}`),
        h('span', {}, `graph type ${summary.graph_type}`), summary.strategy ? h('span', {}, `strategy ${summary.strategy}`) : null,
        h('span', {}, `phases: ${summary.phases.join(' \u2192 ')}`), h('span', { id: 'dep-counts' }, counts), cancel));
    const byName = new Map(summary.groups.map((g) => [g.name, g]));
    const ordered = [...summary.order.map((n) => byName.get(n)).filter(Boolean), ...summary.groups.filter((g) => !summary.order.includes(g.name))];
    fill(groupsBox, ordered.map((g) => {
      const rule = groupRules.get(g.name);
      return h('div', { class: 'group', dataset: { group: g.name, state: g.state } },
        h('b', {}, g.name), ' ', badge(g.state), g.critical ? h('span', { class: 'muted' }, ' critical') : null,
        g.current_phase ? h('div', {}, `phase ${g.current_phase}`) : null,
        rule?.depends_on?.length ? h('div', { class: 'muted' }, `after ${rule.depends_on.join(', ')}`) : null,
        rule?.success_criteria ? h('div', { class: 'muted' }, criteria(rule.success_criteria)) : null,
        h('div', { class: 'bar' }, segments(g.nodes, [[g.succeeded, ''], [g.failed, 'bad'], [g.cancelled ?? 0, 'gone'], [g.running ?? 0, 'run']])),
        h('div', { class: 'muted group-counts' }, groupCounts(g)),
        g.reason ? h('div', { class: 'error' }, g.reason) : null);
    }));
    const statuses = Object.keys(summary.counts);
    const want = statusFilter.value;
    fill(statusFilter, h('option', { value: '' }, 'all nodes'), statuses.map((s) => h('option', { value: s, selected: s === want }, s)));
    nodes.set(want ? summary.nodes.filter((n) => n.status === want) : summary.nodes);
    drawFailures();
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

  // Failed nodes with their whole reason (the list's reason cell is one line): the first few, each
  // opening its node's output.
  function drawFailures() {
    const failed = summary.nodes.filter((n) => n.status === 'failure');
    if (!failed.length) { fill(failuresBox); return; }
    const shown = failed.slice(0, MAX_FAILURES);
    fill(failuresBox, h('h2', {}, `Failed nodes (${failed.length})`),
      h('div', { class: 'failures' }, shown.map((n) => h('div', { class: 'failure', dataset: { node: n.name } },
        h('button', { type: 'button', class: 'link', onclick: () => open(n.id) }, n.name),
        h('span', { class: 'failure-task' }, taskOf(n) ? `task ${taskOf(n)}` : ''),
        h('span', { class: 'muted' }, n.phase ? `phase ${n.phase}` : ''),
        h('span', { class: 'error failure-reason' }, n.reason ?? '')))),
      failed.length > shown.length ? h('p', { class: 'muted' }, `and ${failed.length - shown.length} more: choose "failure" above the list`) : null);
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

  const wasRunning = summary.status === 'running';
  draw();
  window.plinthDeploymentFirstRenderMs = performance.now() - t0;
  // Events carry no time of their own: a live one shows when it came, a finished deployment's stored
  // ones their place in its sequence.
  const addEvent = (kind, e, seq) => {
    const text = kind === 'task_result' ? `${e.node} ${e.task} ${e.status}${e.last ? '' : ' (partial)'}` : `${e.node ?? e.group ?? ''} ${e.phase ?? ''} ${e.message ?? why(e.reason) ?? e.status ?? ''}`;
    const when = wasRunning ? new Date().toLocaleTimeString() : `#${seq ?? ''}`;
    events.prepend(h('div', { class: 'event', dataset: { kind } }, `${when} ${kind} ${text}`));
    while (events.childElementCount > MAX_EVENTS) events.lastChild.remove();
  };
  // A finished deployment's stream gives its stored events and ends; a running one's goes on live.
  const feed = api.stream(`/deployments/${id}/events`, (kind, e, seq) => {
    if (wasRunning) { live.textContent = 'live'; schedule(); }
    addEvent(kind, e, seq);
  }, () => {
    live.textContent = wasRunning ? 'ended' : 'finished';
    if (wasRunning) refresh().catch(() => {});
  });
  return () => { feed.stop(); clearTimeout(timer); };
}

/** An event's reason in words: as it is, or a group's failure by its kind (`criteria after deploy`). */
function why(r) {
  if (r == null || typeof r !== 'object') return r;
  const phase = r.phase ? ` after ${r.phase}` : '';
  const dep = r.dependency ? ` ${r.dependency}` : '';
  return `${String(r.kind ?? 'failed').replace(/_/g, ' ')}${dep}${phase}`;
}

/** The task a node's row shows: the one that failed it, else the running one, else the last reported. */
function taskOf(n) {
  return n.status === 'failure' ? (n.failed_task ?? n.last_task) : n.last_task;
}

/** A node's progress: tasks succeeded of its total; a failed node's bar ends in red and its count in a cross. */
function progress(n) {
  const total = n.total_tasks || 0;
  const ok = n.succeeded_tasks ?? 0;
  const failed = n.status === 'failure';
  const bar = segments(total, [[ok, ''], [failed ? 1 : 0, 'bad'], [n.status === 'running' ? 1 : 0, 'run']]);
  const title = `${ok} of ${total} task(s) succeeded${failed && taskOf(n) ? `; ${taskOf(n)} failed` : ''}`;
  return h('span', { class: failed ? 'progress failed' : 'progress', title },
    h('span', { class: 'bar' }, bar), h('span', { class: 'count' }, `${ok}/${total}${failed ? ' \u2717' : ''}`));
}

/** A bar's coloured parts: [count, class] each, as shares of `total`. */
function segments(total, parts) {
  return parts.filter(([k]) => k > 0 && total > 0).map(([k, cls]) => {
    const seg = h('span', { class: cls });
    seg.style.width = `${Math.min(100, (100 * k) / total)}%`;
    return seg;
  });
}

/** A group's nodes by state, the states it has, of how many. */
function groupCounts(g) {
  const parts = [['succeeded', 'ok'], ['running', 'running'], ['prepared', 'prepared'], ['failed', 'failed'],
    ['cancelled', 'cancelled'], ['not_started', 'not started']].filter(([k]) => g[k]).map(([k, word]) => `${g[k]} ${word}`);
  return `${parts.join(', ') || 'no nodes'} of ${g.nodes}`;
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
