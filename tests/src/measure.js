// The console tests' layout measurement, run in the page by `Browser::measure_layout`. arguments[0]:
// { cells, rows, boxes: CSS selectors (empty: none), aligned: [[header row, body rows]] }. Answers
// { offences: [{selector, problem, sizes, text, title}], ellipsised: [{selector, text, title}], measured }.
// - a cell's content must fit its box (scrollWidth <= clientWidth, scrollHeight <= clientHeight), unless
//   it is one line deliberately cut with an ellipsis and its title holds every piece of its text;
// - no two rows' boxes overlap, and a row's own content fits it;
// - a header row's cells start and end where each body row's cells do;
// - an SVG box's texts lie inside its rect, and no two boxes overlap;
// - the page is no wider than the window.
const spec = arguments[0];
const offences = [];
const ellipsised = [];
let measured = 0;

const name = (el) => {
  const parts = [];
  for (let e = el; e && e.nodeType === 1 && parts.length < 5; e = e.parentElement) {
    let p = e.tagName.toLowerCase();
    if (e.id) { parts.unshift(`${p}#${e.id}`); break; }
    if (e.classList.length) p += `.${[...e.classList].join('.')}`;
    if (e.parentElement) p += `:nth-child(${[...e.parentElement.children].indexOf(e) + 1})`;
    parts.unshift(p);
  }
  return parts.join(' > ');
};
const shown = (el) => el.getClientRects().length > 0 && getComputedStyle(el).visibility !== 'hidden';
const all = (sel) => (sel ? [...document.querySelectorAll(sel)].filter(shown) : []);
const sizes = (el) => ({ scroll_width: el.scrollWidth, client_width: el.clientWidth, scroll_height: el.scrollHeight, client_height: el.clientHeight });
const text = (el) => (el.textContent || '').replace(/\s+/g, ' ').trim();
const pieces = (el) => {
  const out = [];
  const walk = document.createTreeWalker(el, NodeFilter.SHOW_TEXT);
  for (let n = walk.nextNode(); n; n = walk.nextNode()) { const t = n.textContent.replace(/\s+/g, ' ').trim(); if (t) out.push(t); }
  return out;
};
const overlap = (a, b) => a.left < b.right - 0.5 && b.left < a.right - 0.5 && a.top < b.bottom - 0.5 && b.top < a.bottom - 0.5;
const box = (r) => ({ left: r.left, top: r.top, right: r.right, bottom: r.bottom });

for (const el of all(spec.cells)) {
  if (getComputedStyle(el).display === 'inline') continue; // no box of its own: its block is measured
  measured++;
  const s = sizes(el);
  if (s.scroll_width <= s.client_width && s.scroll_height <= s.client_height) continue;
  const cs = getComputedStyle(el);
  const title = el.getAttribute('title') || '';
  const cut = cs.textOverflow === 'ellipsis' && cs.overflowX === 'hidden' && cs.whiteSpace === 'nowrap'
    && s.scroll_height <= s.client_height && title && pieces(el).every((p) => title.includes(p));
  if (cut) ellipsised.push({ selector: name(el), text: text(el), title });
  else offences.push({ selector: name(el), problem: title ? 'clipped (its title does not hold its text, or it is not cut with an ellipsis)' : 'clipped', sizes: s, text: text(el), title });
}

const rows = all(spec.rows);
for (const el of rows) {
  measured++;
  const s = sizes(el);
  if (s.scroll_width > s.client_width || s.scroll_height > s.client_height) {
    offences.push({ selector: name(el), problem: 'row content larger than the row', sizes: s, text: text(el), title: el.getAttribute('title') || '' });
  }
}
const rects = rows.map((el) => [el, el.getBoundingClientRect()]);
for (let i = 0; i < rects.length; i++) {
  for (let j = i + 1; j < rects.length; j++) {
    if (overlap(rects[i][1], rects[j][1])) {
      offences.push({ selector: `${name(rects[i][0])} / ${name(rects[j][0])}`, problem: 'rows overlap', sizes: { a: box(rects[i][1]), b: box(rects[j][1]) }, text: `${text(rects[i][0])} / ${text(rects[j][0])}`, title: '' });
    }
  }
}

for (const [headSel, rowSel] of spec.aligned || []) {
  const heads = all(headSel);
  const bodies = all(rowSel);
  if (!heads.length || !bodies.length) { offences.push({ selector: `${headSel} / ${rowSel}`, problem: 'nothing to align', sizes: {}, text: '', title: '' }); continue; }
  for (const head of heads) {
    const hc = [...head.children].map((c) => c.getBoundingClientRect());
    for (const row of bodies) {
      measured++;
      const rc = [...row.children].map((c) => c.getBoundingClientRect());
      if (rc.length !== hc.length) { offences.push({ selector: name(row), problem: `${rc.length} cells under ${hc.length} headers`, sizes: {}, text: text(row), title: '' }); continue; }
      rc.forEach((r, k) => {
        if (Math.abs(r.left - hc[k].left) > 0.5 || Math.abs(r.right - hc[k].right) > 0.5) {
          offences.push({ selector: `${name(row.children[k])}`, problem: `not under its header ${JSON.stringify(text(head.children[k]))}`, sizes: { cell: [r.left, r.right], header: [hc[k].left, hc[k].right] }, text: text(row.children[k]), title: '' });
        }
      });
    }
  }
}

const boxes = all(spec.boxes);
for (const g of boxes) {
  measured++;
  const rect = g.querySelector('rect');
  const w = rect.width.baseVal.value, h = rect.height.baseVal.value;
  for (const t of g.querySelectorAll('text')) {
    const b = t.getBBox();
    if (b.x < 0 || b.y < 0 || b.x + b.width > w || b.y + b.height > h) {
      offences.push({ selector: name(t), problem: 'text outside its box', sizes: { text: [b.x, b.y, b.width, b.height], box: [w, h] }, text: text(t), title: '' });
    }
  }
}
const brects = boxes.map((g) => [g, g.getBoundingClientRect()]);
for (let i = 0; i < brects.length; i++) {
  for (let j = i + 1; j < brects.length; j++) {
    if (overlap(brects[i][1], brects[j][1])) {
      offences.push({ selector: `${name(brects[i][0])} / ${name(brects[j][0])}`, problem: 'boxes overlap', sizes: { a: box(brects[i][1]), b: box(brects[j][1]) }, text: `${text(brects[i][0])} / ${text(brects[j][0])}`, title: '' });
    }
  }
}

const page = document.documentElement;
if (page.scrollWidth > page.clientWidth) {
  offences.push({ selector: 'html', problem: 'page wider than the window', sizes: sizes(page), text: '', title: '' });
}
return { offences, ellipsised, measured };
