// A virtual list: only the rows in view (and a few around) exist in the DOM, so ten thousand items
// cost what thirty do. Rows are fixed-height.

import { h } from './dom.js';

export const ROW = 28;

/**
 * Creates a virtual list in `container`. render(item, index) makes a row's cells; onClick(item) on a
 * click. Answers { set(items), refresh(), el }.
 */
export function vlist(container, { render, onClick, rowClass }) {
  const spacer = h('div', { class: 'vlist-spacer' });
  const box = h('div', { class: 'vlist' }, spacer);
  container.append(box);
  let items = [];
  let drawn = '';
  const draw = (force) => {
    const first = Math.max(0, Math.floor(box.scrollTop / ROW) - 5);
    const count = Math.ceil((box.clientHeight || 600) / ROW) + 10;
    const last = Math.min(items.length, first + count);
    const key = `${first}:${last}`;
    if (!force && key === drawn) return;
    drawn = key;
    const rows = [];
    for (let i = first; i < last; i++) {
      const item = items[i];
      const row = h('div', { class: `vrow ${rowClass}`, dataset: { index: i } }, render(item, i));
      row.style.top = `${i * ROW}px`;
      rows.push(row);
    }
    spacer.replaceChildren(...rows);
  };
  box.addEventListener('scroll', () => requestAnimationFrame(() => draw(false)));
  box.addEventListener('click', (e) => {
    const row = e.target.closest('.vrow');
    if (row && onClick) onClick(items[Number(row.dataset.index)]);
  });
  return {
    el: box,
    set(next) {
      items = next;
      spacer.style.height = `${items.length * ROW}px`;
      draw(true);
    },
    refresh() { draw(true); },
    get items() { return items; },
  };
}
