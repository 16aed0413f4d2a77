// Clusters: the list, and one cluster's page: its nodes, graphs, strategies (each group and the
// nodes it selects), the pre-deployment checks, starting a deployment, and its deployments.

import * as api from './api.js';
import { h, fill, badge, toast, list } from './dom.js';

/** `#/clusters`. */
export async function clustersPage(main) {
  const clusters = await api.get('/clusters');
  fill(main, h('h1', {}, 'Clusters'),
    clusters.length === 0 ? h('p', { class: 'muted' }, 'No clusters yet.') : null,
    h('table', { id: 'clusters' },
      h('tr', {}, ['Id', 'Name', 'Release', ''].map((t) => h('th', {}, t))),
      clusters.map((c) => h('tr', { dataset: { cluster: c.id } },
        h('td', {}, c.id),
        h('td', { class: 'cluster-name' }, h('a', { href: `#/cluster/${c.id}` }, c.name)),
        h('td', {}, c.release_id),
        h('td', {}, h('a', { href: `#/nodes?cluster_id=${c.id}` }, 'nodes'), ' \u00b7 ',
          h('a', { href: `#/cluster/${c.id}/graph` }, 'graph'))))));
}

/** `#/cluster/ID`. */
export async function clusterPage(main, id) {
  const cluster = await api.get(`/clusters/${id}`);
  const [graphs, releaseGraphs, strategies, deployments] = await Promise.all([
    api.get(`/clusters/${id}/deployment_graphs`).catch(() => []),
    api.get(`/releases/${cluster.release_id}/deployment_graphs`).catch(() => []),
    api.get(`/clusters/${id}/strategies`).catch(() => []),
    api.get(`/deployments?cluster_id=${id}`),
  ]);
  const types = [...new Set([...list(graphs), ...list(releaseGraphs)].map((g) => g.graph_type).filter(Boolean))].sort();
  if (!types.includes('default')) types.unshift('default');
  const strategyNames = list(strategies).map((s) => s.name);

  const strategyBox = h('div', { id: 'strategies' });
  const checksBox = h('div', { id: 'checks' });
  fill(main,
    h('h1', {}, 'Cluster ', h('span', { id: 'cluster-name' }, cluster.name), h('span', { class: 'muted' }, ` #${id}`)),
    h('div', { class: 'row' },
      h('a', { href: `#/nodes?cluster_id=${id}` }, 'Nodes'),
      types.map((t) => h('a', { href: `#/cluster/${id}/graph/${t}` }, `graph: ${t}`))),
    deployForm(id, types, strategyNames),
    h('h2', {}, 'Pre-deployment checks'), checksForm(id, types, checksBox), checksBox,
    h('h2', {}, 'Strategies'), strategyBox,
    h('h2', {}, 'Deployments'),
    h('table', { id: 'cluster-deployments' },
      h('tr', {}, ['Id', 'Graph type', 'Status', 'Started'].map((t) => h('th', {}, t))),
      deployments.sort((a, b) => b.id - a.id).map((d) => h('tr', {},
        h('td', {}, h('a', { href: `#/deployment/${d.id}` }, `#${d.id}`)),
        h('td', {}, d.graph_type), h('td', {}, badge(d.status)),
        h('td', {}, new Date(d.created_at_ms).toLocaleString())))));
  showStrategies(id, strategyNames, strategyBox);
}

function deployForm(id, types, strategies) {
  const type = h('select', { id: 'deploy-graph-type' }, types.map((t) => h('option', { value: t }, t)));
  const strategy = h('select', { id: 'deploy-strategy' }, h('option', { value: '' }, '(no strategy)'),
    strategies.map((s) => h('option', { value: s }, s)));
  const nodes = h('input', { id: 'deploy-nodes', placeholder: 'node ids, e.g. 1,2 (all when empty)', size: 28 });
  const dry = h('input', { type: 'checkbox', id: 'deploy-dry-run' });
  const out = h('div', { id: 'deploy-result' });
  const button = h('button', { class: 'primary', type: 'submit', id: 'deploy-start', disabled: !api.canAct() }, 'Start');
  const form = h('form', { class: 'card', id: 'deploy-form' },
    h('h2', {}, 'Start a deployment'),
    h('div', { class: 'row' }, h('label', {}, 'Graph type ', type), h('label', {}, 'Strategy ', strategy),
      h('label', {}, 'Nodes ', nodes), h('label', {}, dry, ' dry run'), button),
    api.canAct() ? null : h('p', { class: 'muted' }, 'This token is read-only.'),
    out);
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    const query = api.qs({
      graph_type: strategy.value ? undefined : type.value,
      strategy: strategy.value || undefined,
      nodes: nodes.value.replace(/\s+/g, ''),
      dry_run: dry.checked ? 'true' : undefined,
    });
    try {
      const r = await api.put(`/clusters/${id}/deploy${query}`);
      if (dry.checked) {
        fill(out, h('h3', {}, 'Dry run: what each node would run'), dryRun(r));
      } else {
        toast(`Deployment ${r.id} started`);
        location.hash = `#/deployment/${r.id}`;
      }
    } catch (err) {
      fill(out, h('div', { class: 'error', id: 'deploy-error' }, err.message));
    }
  });
  return form;
}

function checksForm(id, types, box) {
  const type = h('select', { id: 'checks-graph-type' }, types.map((t) => h('option', { value: t }, t)));
  const run = async () => {
    const r = await api.get(`/clusters/${id}/checks${api.qs({ graph_type: type.value })}`);
    fill(box, h('p', {}, r.ok ? badge('ok') : badge('failed'), ` ${r.findings.length} finding(s)`),
      r.findings.length ? h('table', { id: 'findings' },
        h('tr', {}, ['Severity', 'Code', 'Message'].map((t) => h('th', {}, t))),
        r.findings.map((f) => h('tr', {}, h('td', {}, badge(f.severity)), h('td', {}, f.code), h('td', {}, f.message)))) : null);
  };
  return h('div', { class: 'row' }, h('label', {}, 'Graph type ', type),
    h('button', { type: 'button', id: 'checks-run', onclick: () => run().catch((e) => fill(box, h('div', { class: 'error' }, e.message))) }, 'Run checks'));
}

/** Each strategy: its groups in order, with criteria, dependencies and the nodes each selects. */
async function showStrategies(id, names, box) {
  if (!names.length) { fill(box, h('p', { class: 'muted' }, 'No strategies.')); return; }
  fill(box);
  for (const name of names) {
    try {
      const v = await api.get(`/clusters/${id}/strategies/${encodeURIComponent(name)}/check`);
      box.append(strategyCard(name, v.check));
    } catch (e) {
      box.append(h('div', { class: 'card' }, h('b', {}, name), h('div', { class: 'error' }, e.message)));
    }
  }
}

/** A strategy's groups as the validator reports them. */
export function strategyCard(name, check) {
  return h('div', { class: 'card strategy', dataset: { strategy: name } },
    h('b', {}, name), h('span', { class: 'muted' }, ` phases: ${check.phases.map((p) => p.name || p.phase).join(' \u2192 ')}`),
    h('table', {},
      h('tr', {}, ['Group', 'Critical', 'Depends on', 'Success criteria', 'Nodes'].map((t) => h('th', {}, t))),
      check.groups.map((g) => h('tr', { dataset: { group: g.name } },
        h('td', {}, g.name), h('td', {}, g.critical ? 'yes' : 'no'), h('td', {}, g.depends_on.join(', ')),
        h('td', {}, criteria(g.success_criteria)), h('td', { class: 'group-nodes' }, g.nodes.join(', '))))),
    check.unselected_nodes.length ? h('p', { class: 'muted' }, `Not selected: ${check.unselected_nodes.join(', ')}`) : null);
}

/** Success criteria in words. */
export function criteria(c) {
  if (!c) return '';
  return Object.entries(c).map(([k, v]) => `${k.replace(/_/g, ' ')}: ${v}`).join('; ');
}

/** A dry run's answer: per phase and node, the tasks in order; then the checks' findings. */
function dryRun(r) {
  const rows = [];
  for (const [phase, nodes] of Object.entries(r.nodes || {})) {
    for (const [node, tasks] of Object.entries(nodes)) {
      rows.push(h('tr', { dataset: { node } }, h('td', {}, phase), h('td', {}, node),
        h('td', {}, list(tasks).map((t) => t.id).join(' \u2192 '))));
    }
  }
  return h('div', { id: 'dry-run-output' },
    h('table', {}, h('tr', {}, ['Phase', 'Node', 'Tasks'].map((t) => h('th', {}, t))), rows),
    list(r.findings).map((f) => h('div', {}, badge(f.severity), ` ${f.code}: ${f.message}`)));
}
