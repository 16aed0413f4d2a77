// Nodes: filters that the server applies (status, admission, cluster, tag, name), pages fetched by
// marker and appended, a virtual list for thousands of rows (each with its cluster's name and, for a
// node in error, why and the deployment that failed it), and one node's facts, accept and roles.

import * as api from './api.js';
import { h, fill, badge, bytes, toast } from './dom.js';
import { vlist } from './vlist.js';

const PAGE = 2000;

/** `#/nodes?status=&admission=&cluster_id=&tag=&name=`. */
export async function nodesPage(main, params) {
  const field = (name, el) => { el.id = `filter-${name}`; el.value = params.get(name) || ''; return h('label', {}, `${name.replace('_', ' ')} `, el); };
  const status = h('select', {}, ['', 'discover', 'provisioning', 'provisioned', 'deploying', 'ready', 'error'].map((s) => h('option', { value: s }, s || 'any')));
  const admission = h('select', {}, ['', 'discovered', 'accepted'].map((s) => h('option', { value: s }, s || 'any')));
  const cluster = h('input', { size: 5 });
  const tag = h('input', { size: 12 });
  const name = h('input', { size: 16, placeholder: 'name contains' });
  const count = h('span', { id: 'node-count', class: 'muted' });
  const detail = h('div', { id: 'node-detail' });
  const listBox = h('div', { id: 'nodes-list' });
  // Cluster names by id, read once per visit (a name the list does not know shows as its id).
  const clusters = new Map((await api.get('/clusters').catch(() => [])).map((c) => [c.id, c.name]));
  const clusterName = (cid) => (cid == null ? '' : clusters.get(cid) ?? `#${cid}`);
  fill(main, h('h1', {}, 'Nodes'),
    h('form', { class: 'row', id: 'node-filters' }, field('status', status), field('admission', admission),
      field('cluster_id', cluster), field('tag', tag), field('name', name),
      h('button', { type: 'submit', id: 'filter-apply' }, 'Filter'), count),
    h('div', { class: 'split' }, listBox, detail));
  const list = vlist(listBox, {
    head: ['Id', 'Name', 'Cluster', 'Admission', 'Status', 'Online', 'CPUs', 'Memory', 'Roles', 'Tags', 'Error'],
    rowClass: 'nodes-grid',
    render: (n) => [
      h('span', {}, n.id), h('span', { class: 'node-name' }, n.name),
      h('span', { class: 'node-cluster', title: n.cluster_id == null ? '' : `${clusterName(n.cluster_id)} (#${n.cluster_id})` }, clusterName(n.cluster_id)),
      h('span', {}, badge(n.admission)), h('span', {}, badge(n.status)), h('span', {}, badge(n.online ? 'online' : 'offline')),
      h('span', {}, n.hardware?.cpus ?? ''), h('span', {}, bytes(n.hardware?.memory_bytes)),
      h('span', {}, [...n.roles, ...n.pending_roles.map((r) => `${r}*`)].join(', ')),
      h('span', {}, (n.effective_tags || []).join(', ')),
      errorCell(n),
    ],
    onClick: (n) => showNode(detail, n.id, () => load(), clusterName),
  });

  window.plinthNodesList = list; // for the benchmark: its redraw cost
  let generation = 0;
  async function load() {
    const mine = ++generation;
    const filters = { status: status.value, admission: admission.value, cluster_id: cluster.value.trim(), tag: tag.value.trim(), name: name.value.trim() };
    const t0 = performance.now();
    let marker = null;
    let all = [];
    count.textContent = 'loading\u2026';
    do {
      const { data, headers } = await api.get(`/nodes${api.qs({ ...filters, limit: PAGE, marker })}`, { withHeaders: true });
      if (mine !== generation) return;
      all = all.concat(data);
      list.set(all);
      if (marker === null) window.plinthFirstPageMs = performance.now() - t0;
      marker = headers.get('x-next-marker');
    } while (marker);
    count.textContent = `${all.length} node(s)`;
    window.plinthNodesLoadedMs = performance.now() - t0;
  }
  main.querySelector('#node-filters').addEventListener('submit', (e) => {
    e.preventDefault();
    const q = api.qs({ status: status.value, admission: admission.value, cluster_id: cluster.value.trim(), tag: tag.value.trim(), name: name.value.trim() });
    history.replaceState(null, '', `#/nodes${q}`);
    load();
  });
  await load();
  return () => { generation++; };
}

/** Why a node is in error, and a link to the deployment that failed it. */
function errorCell(n) {
  if (n.status !== 'error') return h('span', { class: 'node-error' });
  const why = n.error_msg ?? n.error_type ?? 'error';
  const dep = n.error_deployment_id;
  return h('span', { class: 'node-error error', title: dep == null ? why : `${why} (deployment #${dep})` },
    dep == null ? null : [h('a', { href: `#/deployment/${dep}`, class: 'node-error-deployment' }, `#${dep}`), ' '], why);
}

async function showNode(box, id, reload, clusterName) {
  const n = await api.get(`/nodes/${id}`);
  const f = n.facts || {};
  const accept = n.admission === 'discovered'
    ? h('button', { class: 'primary', id: 'node-accept', disabled: !api.canAct(), onclick: async () => {
      try { await api.post(`/nodes/${id}/accept`); toast(`Node ${n.name} accepted`); await showNode(box, id, reload, clusterName); reload(); } catch (e) { toast(e.message); }
    } }, 'Accept') : null;
  const rolesIn = h('input', { id: 'node-roles', size: 24, value: n.pending_roles.join(',') });
  const clusterIn = h('input', { id: 'node-cluster', size: 5, value: n.cluster_id ?? '' });
  const assign = h('form', { class: 'row', id: 'node-assign' }, h('label', {}, 'cluster ', clusterIn), h('label', {}, 'roles ', rolesIn),
    h('button', { type: 'submit', disabled: !api.canAct() }, 'Assign'));
  assign.addEventListener('submit', async (e) => {
    e.preventDefault();
    const roles = rolesIn.value.split(',').map((r) => r.trim()).filter(Boolean);
    try {
      await api.put(`/clusters/${Number(clusterIn.value)}/nodes`, { nodes: [{ id, roles }] });
      toast(`Roles of ${n.name} set`); await showNode(box, id, reload, clusterName); reload();
    } catch (err) { toast(err.message); }
  });
  fill(box, h('div', { class: 'card', dataset: { node: id } },
    h('h2', {}, n.name, ' ', badge(n.status), ' ', badge(n.online ? 'online' : 'offline')),
    h('div', { class: 'row' }, accept, badge(n.admission),
      n.cluster_id == null ? null : h('a', { href: `#/cluster/${n.cluster_id}`, id: 'node-cluster-link' }, `cluster ${clusterName(n.cluster_id)}`)),
    n.status === 'error' ? h('div', { class: 'error', id: 'node-error' }, n.error_msg ?? n.error_type ?? 'error',
      n.error_deployment_id == null ? null : [' \u2014 ', h('a', { href: `#/deployment/${n.error_deployment_id}` }, `deployment #${n.error_deployment_id}`)]) : null,
    assign,
    h('dl', { class: 'facts' },
      h('dt', {}, 'Roles'), h('dd', {}, n.roles.join(', ') || '\u2014', n.pending_roles.length ? ` (pending: ${n.pending_roles.join(', ')})` : ''),
      h('dt', {}, 'Tags'), h('dd', { id: 'node-tags' }, (n.effective_tags || []).join(', ') || '\u2014'),
      h('dt', {}, 'Installed'), h('dd', { id: 'node-provisioned' }, provisioned(n.model?.provisioned)),
      h('dt', {}, 'Agent'), h('dd', { id: 'node-agent' }, n.agent ? `${n.agent.version} (protocol ${n.agent.protocol})` : '\u2014'),
      h('dt', {}, 'OS'), h('dd', {}, f.os?.pretty_name ?? '', ' ', f.kernel ?? ''),
      h('dt', {}, 'CPU'), h('dd', { id: 'node-cpu' }, f.cpu ? `${f.cpu.threads} threads, ${f.cpu.model ?? ''}` : '\u2014'),
      h('dt', {}, 'Memory'), h('dd', {}, bytes(f.memory?.total_bytes)),
      h('dt', {}, 'Disks'), h('dd', {}, h('table', {}, (f.disks || []).map((d) => h('tr', {}, h('td', {}, d.name), h('td', {}, bytes(d.size_bytes)), h('td', {}, d.model ?? ''))))),
      h('dt', {}, 'NICs'), h('dd', {}, h('table', {}, (f.nics || []).map((x) => h('tr', {}, h('td', {}, x.name), h('td', {}, x.mac ?? ''), h('td', {}, (x.addresses || []).join(' ')), h('td', {}, x.link_up ? 'up' : 'down'))))))));
}

/** What the node's last provision task installed: image, disk, when. */
function provisioned(p) {
  if (!p) return '\u2014';
  const disk = p.disk_serial ? `${p.disk} (${p.disk_serial})` : p.disk;
  return `${p.image} (${p.format}) on ${disk}, ${new Date(p.at_ms).toLocaleString()}`;
}
