// A cluster's merged graph of one type, laid out by dagre and drawn as SVG: tasks (each box its id, its
// type and its placement: roles, groups, tags), their dependencies (requires / required_for) and
// cross-node waits (cross_depends, dashed); zoom and pan; "parents for" a task highlights everything that
// must come before it, as graph.gv's parents_for does.

import * as api from './api.js';
import { h, s, fill, list } from './dom.js';

const ID_FONT = '600 12px system-ui, sans-serif';
const LINE_FONT = '11px system-ui, sans-serif';
const LINE = 15; // px per line of a box
const PAD = 8; // px around a box's lines
const MAX_W = 280; // px: the widest a box gets

/** Where a task runs, in words: its roles, groups and tags (an expression is shown as such). */
export function placement(t) {
  const parts = [];
  for (const k of ['roles', 'groups', 'tags']) {
    const v = t[k];
    if (v == null) continue;
    const words = Array.isArray(v) ? v.map(String) : typeof v === 'string' ? [v] : ['(expression)'];
    if (words.length) parts.push(`${k}: ${words.join(', ')}`);
  }
  return parts.join('; ') || 'no placement';
}

const ctx = document.createElement('canvas').getContext('2d');
function measure(text, font) { ctx.font = font; return ctx.measureText(text).width; }

/** `text`, cut with an ellipsis to fit `width` px in `font`. */
function fit(text, font, width) {
  if (measure(text, font) <= width) return text;
  let lo = 0, hi = text.length;
  while (lo < hi) { const mid = (lo + hi + 1) >> 1; if (measure(`${text.slice(0, mid)}\u2026`, font) <= width) lo = mid; else hi = mid - 1; }
  return `${text.slice(0, lo)}\u2026`;
}

/** `#/cluster/ID/graph/TYPE`. */
export async function graphPage(main, id, type) {
  const tasks = await api.get(`/clusters/${id}/deployment_tasks${api.qs({ graph_type: type })}`);
  const ids = new Set(tasks.map((t) => t.id));
  // Edges: [from, to, cross] meaning `from` must finish before `to`.
  const edges = [];
  for (const t of tasks) {
    for (const r of list(t.requires)) if (ids.has(r)) edges.push([r, t.id, false]);
    for (const r of list(t.required_for)) if (ids.has(r)) edges.push([t.id, r, false]);
    for (const c of list(t.cross_depends)) { const n = c?.name ?? c; if (ids.has(n) && n !== t.id) edges.push([n, t.id, true]); }
    for (const c of list(t.cross_depended_by)) { const n = c?.name ?? c; if (ids.has(n) && n !== t.id) edges.push([t.id, n, true]); }
  }
  const svg = s('svg', { id: 'graph', xmlns: 'http://www.w3.org/2000/svg' });
  const select = h('select', { id: 'parents-for' }, h('option', { value: '' }, '(none)'),
    [...ids].sort().map((t) => h('option', { value: t }, t)));
  const info = h('span', { class: 'muted', id: 'graph-info' }, `${tasks.length} tasks, ${edges.length} edges`);
  const zoomIn = h('button', { type: 'button', id: 'zoom-in' }, '+');
  const zoomOut = h('button', { type: 'button', id: 'zoom-out' }, '\u2212');
  const zoomFit = h('button', { type: 'button', id: 'zoom-fit' }, 'fit');
  fill(main, h('h1', {}, `Graph `, h('span', {}, type), h('span', { class: 'muted' }, ` of cluster #${id}`)),
    h('div', { class: 'row' }, h('a', { href: `#/cluster/${id}` }, '\u2190 cluster'), h('label', {}, 'Parents for ', select), zoomIn, zoomOut, zoomFit, info),
    h('div', { class: 'graph-wrap' }, svg));

  if (!window.dagre) { fill(info, 'the layout library did not load'); return; }
  const g = new window.dagre.graphlib.Graph({ multigraph: true });
  g.setGraph({ rankdir: 'TB', nodesep: 20, ranksep: 40 });
  g.setDefaultEdgeLabel(() => ({}));
  // Each box is as wide as its longest line (measured in the font it is drawn in), up to MAX_W; a longer
  // placement ends in an ellipsis and the box's title has it whole.
  const lines = new Map(tasks.map((t) => {
    const l = [[String(t.id), ID_FONT, 'gid'], [String(t.type ?? ''), LINE_FONT, 'gtype'], [placement(t), LINE_FONT, 'gplace']]
      .map(([text, font, cls]) => { const fitted = fit(text, font, MAX_W - 2 * PAD); return { text: fitted, full: text, font, cls, width: measure(fitted, font) }; });
    return [t.id, l];
  }));
  for (const t of tasks) {
    const l = lines.get(t.id);
    g.setNode(t.id, { width: Math.max(80, Math.ceil(Math.max(...l.map((x) => x.width))) + 2 * PAD), height: l.length * LINE + 2 * PAD - 4 });
  }
  edges.forEach(([a, b], i) => g.setEdge(a, b, {}, `e${i}`));
  window.dagre.layout(g);

  const layer = s('g', {});
  edges.forEach(([a, b, cross], i) => {
    const e = g.edge({ v: a, w: b, name: `e${i}` });
    if (!e) return;
    const d = e.points.map((p, j) => `${j ? 'L' : 'M'}${p.x},${p.y}`).join(' ');
    layer.append(s('path', { class: cross ? 'edge cross' : 'edge', d, 'marker-end': 'url(#arrow)' }));
  });
  const boxes = new Map();
  for (const t of tasks) {
    const n = g.node(t.id);
    const l = lines.get(t.id);
    const box = s('g', { class: 'gnode', transform: `translate(${n.x - n.width / 2},${n.y - n.height / 2})`, 'data-task': t.id },
      s('rect', { width: n.width, height: n.height, rx: 4 }),
      l.map((x, i) => s('text', { x: PAD, y: PAD + i * LINE + 11, class: x.cls }, x.text)),
      s('title', {}, l.map((x) => x.full).join('\n')));
    boxes.set(t.id, box);
    layer.append(box);
  }
  svg.append(s('defs', {}, s('marker', { id: 'arrow', viewBox: '0 0 10 10', refX: 10, refY: 5, markerWidth: 6, markerHeight: 6, orient: 'auto' },
    s('path', { d: 'M0,0 L10,5 L0,10 z', fill: '#8793a6' }))), layer);

  const full = g.graph();
  let view = { x: -10, y: -10, w: (full.width || 100) + 20, h: (full.height || 100) + 20 };
  const apply = () => svg.setAttribute('viewBox', `${view.x} ${view.y} ${view.w} ${view.h}`);
  const zoom = (f) => { const cx = view.x + view.w / 2, cy = view.y + view.h / 2; view.w *= f; view.h *= f; view.x = cx - view.w / 2; view.y = cy - view.h / 2; apply(); };
  apply();
  zoomIn.addEventListener('click', () => zoom(0.8));
  zoomOut.addEventListener('click', () => zoom(1.25));
  zoomFit.addEventListener('click', () => { view = { x: -10, y: -10, w: (full.width || 100) + 20, h: (full.height || 100) + 20 }; apply(); });
  svg.addEventListener('wheel', (e) => { e.preventDefault(); zoom(e.deltaY < 0 ? 0.9 : 1.1); }, { passive: false });
  let drag = null;
  svg.addEventListener('pointerdown', (e) => { drag = { x: e.clientX, y: e.clientY }; });
  window.addEventListener('pointerup', () => { drag = null; });
  svg.addEventListener('pointermove', (e) => {
    if (!drag) return;
    const k = view.w / svg.clientWidth;
    view.x -= (e.clientX - drag.x) * k; view.y -= (e.clientY - drag.y) * k; drag = { x: e.clientX, y: e.clientY }; apply();
  });

  const parentsOf = (task) => {
    const before = new Map();
    for (const [a, b] of edges) { if (!before.has(b)) before.set(b, []); before.get(b).push(a); }
    const seen = new Set();
    const stack = [task];
    while (stack.length) for (const p of before.get(stack.pop()) || []) if (!seen.has(p)) { seen.add(p); stack.push(p); }
    return seen;
  };
  select.addEventListener('change', () => {
    const task = select.value;
    const parents = task ? parentsOf(task) : null;
    for (const [tid, box] of boxes) {
      box.classList.toggle('sel', tid === task);
      box.classList.toggle('hl', !!parents && parents.has(tid));
      box.classList.toggle('dim', !!parents && tid !== task && !parents.has(tid));
    }
    info.textContent = task ? `${parents.size} task(s) before ${task}` : `${tasks.length} tasks, ${edges.length} edges`;
  });
  svg.addEventListener('click', (e) => {
    const box = e.target.closest('.gnode');
    if (box) { select.value = box.dataset.task; select.dispatchEvent(new Event('change')); }
  });
}
