// A table paged, filtered and sorted by the server: a flow of thousands of partitions costs the page one page.

import { fill, h, num } from "./dom.js";

/**
 * columns: [{key, label, sortable, numeric, cell(row)}]; load({q, sort, desc, offset, limit}) resolves with
 * {rows, matched, total}. Returns {element, refresh()}; refresh resolves with what `load` gave.
 */
export function pagedTable({ id, caption, columns, load, limit = 50, sort = null, filterLabel = "Filter" }) {
  const state = { q: "", sort, desc: false, offset: 0, limit };
  const body = h("tbody");
  const head = h("tr");
  const info = h("span", { class: "muted", "aria-live": "polite" });
  const prev = h("button", { type: "button", onclick: () => move(-1) }, "Previous");
  const next = h("button", { type: "button", onclick: () => move(1) }, "Next");
  let timer = null;
  const filter = h("input", {
    type: "search",
    id: `${id}-filter`,
    placeholder: "e.g. orders-1",
    oninput: () => {
      clearTimeout(timer);
      timer = setTimeout(() => {
        state.q = filter.value;
        state.offset = 0;
        refresh();
      }, 250);
    },
  });

  function header() {
    fill(head, columns.map((col) => {
      if (!col.sortable) return h("th", { scope: "col" }, col.label);
      const active = state.sort === col.key;
      const order = active ? (state.desc ? "descending" : "ascending") : "none";
      return h("th", { scope: "col", "aria-sort": order },
        h("button", { type: "button", class: "sort", "data-sort": col.key, onclick: () => sortBy(col.key) },
          col.label, active ? (state.desc ? " ▼" : " ▲") : ""));
    }));
  }

  function sortBy(key) {
    state.desc = state.sort === key ? !state.desc : Boolean(columns.find((c) => c.key === key)?.numeric);
    state.sort = key;
    state.offset = 0;
    refresh();
  }

  function move(step) {
    state.offset = Math.max(0, state.offset + step * state.limit);
    refresh();
  }

  async function refresh() {
    const page = await load({ ...state });
    header();
    fill(body, page.rows.length
      ? page.rows.map((row) => h("tr", {}, columns.map((col) => h("td", { class: col.numeric ? "num" : "" }, col.cell(row)))))
      : h("tr", {}, h("td", { colspan: columns.length }, "Nothing matches.")));
    const last = Math.min(page.matched, state.offset + page.rows.length);
    fill(info, page.matched
      ? `${num(state.offset + 1)}–${num(last)} of ${num(page.matched)} (${num(page.total)} in all)`
      : `0 of ${num(page.total)}`);
    prev.disabled = state.offset === 0;
    next.disabled = last >= page.matched;
    return page;
  }

  header();
  const element = h("section", { class: "paged", id },
    h("div", { class: "toolbar" }, h("label", { for: `${id}-filter` }, filterLabel), filter, prev, next, info),
    h("div", { class: "scroll" }, h("table", { class: "grid" }, h("caption", {}, caption), h("thead", {}, head), body)));
  return { element, refresh };
}
