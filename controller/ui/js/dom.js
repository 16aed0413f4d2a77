// DOM helpers. Every value reaches the page through text nodes or attribute setters, never through
// innerHTML, so nothing a node, a graph or an operator wrote can become markup.

/** Creates an element: h('td', {class: 'x', dataset: {id: 1}, onclick: f}, 'text', child, ...). */
export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  setAttrs(el, attrs);
  append(el, children);
  return el;
}

/** Creates an SVG element with attributes. */
export function s(tag, attrs, ...children) {
  const el = document.createElementNS('http://www.w3.org/2000/svg', tag);
  setAttrs(el, attrs);
  append(el, children);
  return el;
}

function setAttrs(el, attrs) {
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2), v);
    else if (k === 'dataset') Object.assign(el.dataset, v);
    else el.setAttribute(k, v === true ? '' : String(v));
  }
}

function append(el, children) {
  for (const c of children.flat(Infinity)) {
    if (c === undefined || c === null || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
}

/** Escapes text for HTML (for the rare place text must be markup-safe as a string, e.g. a title). */
export function escapeHtml(v) {
  return String(v).replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]);
}

/** Replaces an element's children. */
export function fill(el, ...children) {
  el.replaceChildren();
  append(el, children);
  return el;
}

/** A status badge (its class comes from a fixed set of words, not from the value's text). */
export function badge(status) {
  const word = String(status ?? '');
  const cls = /^[a-z_]+$/.test(word) ? `badge s-${word}` : 'badge';
  return h('span', { class: cls, 'data-status': word }, word);
}

/** Bytes as GiB/MiB. */
export function bytes(n) {
  if (n == null) return '';
  if (n >= 1 << 30) return `${(n / (1 << 30)).toFixed(1)} GiB`;
  return `${Math.round(n / (1 << 20))} MiB`;
}

/** Shows a short message in the corner. */
export function toast(text) {
  const t = document.getElementById('toast');
  t.textContent = text;
  t.classList.add('show');
  clearTimeout(toast.timer);
  toast.timer = setTimeout(() => t.classList.remove('show'), 4000);
}

/** A list from a value that may be one item, a list, or nothing. */
export function list(v) {
  return Array.isArray(v) ? v : v == null ? [] : [v];
}
