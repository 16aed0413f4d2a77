// A virtual list: only the rows in view (and a few around) exist in the DOM, so ten thousand items
// cost what thirty do. Rows are fixed-height and one line each: a cell whose text is wider than its
// column ends in an ellipsis and carries the whole text as its title (the page shows it in full
// elsewhere, e.g. a node's detail card). The header row lives inside the scrolling box (sticky), so
// header and rows share one width and one column template and their columns line up. The box is as
// tall as its rows, up to a maximum, so a short list leaves no empty space below it.

import { h } from './dom.js';

export const ROW = 30;

/**
 * Creates a virtual list in `container`. head: the column titles; render(item, index) makes a row's
 * cells; onClick(item) on a click. Answers { set(items), refresh(), el }.
 */
export function vlist(container, { head, render, onClick, rowClass }) {
  const spacer = h('div', { class: 'vlist-spacer' });
  const header = head ? h('div', { class: `vhead ${rowClass}` }, head.map((t) => h('span', { class: 'cell', title: t }, t))) : null;
  const box = h('div', { class: 'vlist' }, header, spacer);
  container.append(box);
  let items = [];
  let drawn = '';
  const headHeight = () => (header ? header.offsetHeight : 0);
  const draw = (force) => {
    const top = Math.max(0, box.scrollTop - headHeight());
    const first = Math.max(0, Math.floor(top / ROW) - 5);
    const count = Math.ceil((box.clientHeight || 600) / ROW) + 10;
    const last = Math.min(items.length, first + count);
    const key = `${first}:${last}`;
    if (!force && key === drawn) return;
    drawn = key;
    const rows = [];
    for (let i = first; i < last; i++) {
      const item = items[i];
      const row = h('div', { class: `vrow ${rowClass}`, dataset: { index: i } }, render(item, i));
      // One line per cell: the full text goes along as the cell's title unless the cell set its own.
      for (const cell of row.children) {
        cell.classList.add('cell');
        if (!cell.title) cell.title = cell.textContent.trim();
      }
      row.style.top = `${i * ROW}px`;
      rows.push(row);
    }
    spacer.replaceChildren(...rows);
  };
  box.addEventListener('scroll', () => requestAnimationFrame(() => draw(false)));
  box.addEventListener('click', (e) => {
    if (e.target.closest('a')) return; // a link in a row goes where it points
    const row = e.target.closest('.vrow');
    if (row && onClick) onClick(items[Number(row.dataset.index)]);
  });
  return {
    el: box,
    set(next) {
      items = next;
      spacer.style.height = `${items.length * ROW}px`;
      // As tall as the rows (and the header and borders), never taller than the stylesheet's maximum.
      box.style.height = `${items.length * ROW + headHeight() + 2}px`;
      draw(true);
    },
    refresh() { draw(true); },
    get items() { return items; },
  };
}
