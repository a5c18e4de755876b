// The overview: one row per flow, the flows in trouble first, each with why.

import { badge, fill, h, num, secs, millis } from "./dom.js";
import { subscribe } from "./live.js";

const ORDER = { down: 0, warn: 1, "failed-over": 2, ok: 3 };

function audit(flow) {
  if (!flow.audit) return "–";
  const a = flow.audit;
  const bad = a.missing + a.altered;
  return h("span", { class: bad ? "bad-text" : "" }, `${num(a.verified)} verified, ${num(a.missing)} missing`);
}

function row(flow) {
  const link = `#/flow/${encodeURIComponent(flow.source)}/${encodeURIComponent(flow.target)}`;
  return h(
    "tr",
    { class: `flow ${flow.health}`, "data-flow": flow.flow, "data-health": flow.health },
    h("th", { scope: "row" }, h("a", { href: link }, flow.flow)),
    h("td", { class: "health" }, badge(flow.health), flow.stale ? h("span", { class: "badge stale" }, "stale") : null,
      flow.reasons.length ? h("ul", { class: "reasons" }, flow.reasons.map((r) => h("li", {}, r))) : null),
    h("td", {}, flow.state),
    h("td", { class: "num" }, num(flow.topics)),
    h("td", { class: "num" }, num(flow.records_mirrored)),
    h("td", { class: "num" }, num(flow.rpo_records)),
    h("td", { class: "num" }, secs(flow.rpo_seconds)),
    h("td", { class: "num" }, secs(flow.heartbeat_age_s), flow.latency_ms !== null ? ` (${millis(flow.latency_ms)})` : ""),
    h("td", { class: "num" }, secs(flow.checkpoint_age_s), flow.groups ? ` · ${num(flow.groups)} group${flow.groups === 1 ? "" : "s"}` : ""),
    h("td", {}, audit(flow)),
  );
}

export function renderOverview(main, alive) {
  const body = h("tbody", { id: "flows" });
  const heads = ["flow", "health, and what is wrong", "state", "topics", "records copied", "records behind",
    "seconds behind (RPO)", "heartbeat age (latency)", "newest checkpoint", "audit"];
  fill(
    main,
    h("h1", {}, "Replication overview"),
    h("p", { class: "muted" }, "Every flow this translator serves. Flows in trouble come first."),
    h("div", { class: "scroll" },
      h("table", { class: "grid", id: "overview" },
        h("thead", {}, h("tr", {}, heads.map((name) => h("th", { scope: "col" }, name)))),
        body)),
  );
  const unsubscribe = subscribe((overview) => {
    if (!alive()) return unsubscribe();
    const flows = [...overview.flows].sort((a, b) => ORDER[a.health] - ORDER[b.health] || a.flow.localeCompare(b.flow));
    fill(body, flows.length ? flows.map(row) : h("tr", {}, h("td", { colspan: 10 }, "No flows served.")));
  });
}
