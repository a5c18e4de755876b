// A flow: its health, a chart of the last hour, its partitions and topics (paged on the server), its consumer
// groups with where each resumes on the target, and what the audit found.

import { get } from "./api.js";
import { lineChart } from "./chart.js";
import { badge, fill, flowPath, h, millis, num, secs, when } from "./dom.js";
import { every, subscribe } from "./live.js";
import { pagedTable } from "./table.js";

const query = (params) => new URLSearchParams(Object.entries(params).filter(([, v]) => v !== null && v !== "")).toString();

function figures(flow) {
  const cell = (label, value, id) => h("div", { class: "figure", id }, h("span", { class: "label" }, label), h("strong", {}, value));
  return [
    cell("State", flow.state, "fig-state"),
    cell("Records copied", num(flow.records_mirrored), "fig-copied"),
    cell("Records behind", num(flow.rpo_records), "fig-rpo-records"),
    cell("Seconds behind (RPO)", secs(flow.rpo_seconds), "fig-rpo-seconds"),
    cell("Heartbeat age", secs(flow.heartbeat_age_s), "fig-heartbeat"),
    cell("Replication latency", millis(flow.latency_ms), "fig-latency"),
    cell("Newest checkpoint", secs(flow.checkpoint_age_s), "fig-checkpoint"),
    cell("Groups behind", num(flow.groups_behind), "fig-groups-behind"),
  ];
}

function auditSection(flow) {
  const a = flow.audit;
  if (!a) return h("p", { class: "muted" }, "No audit reports for this flow.");
  return [
    h("p", {}, `${num(a.verified)} records verified; ${num(a.missing)} missing, ${num(a.altered)} altered, `,
      `${num(a.unexpected)} unexpected, ${num(a.duplicates)} duplicates, ${num(a.expired_before_audit)} expired before the audit.`),
    a.losses.length
      ? h("ul", { class: "losses" }, a.losses.map((loss) => h("li", { class: "bad-text" }, loss)))
      : h("p", { class: "ok-text" }, "No loss found."),
  ];
}

function partitionsTable(base) {
  return pagedTable({
    id: "partitions",
    caption: "Partitions: data-mirror's copy position against the source's end",
    filterLabel: "Filter partitions",
    sort: "topic",
    columns: [
      { key: "topic", label: "topic-partition", sortable: true, cell: (r) => `${r.topic}-${r.partition}` },
      { key: "next_offset", label: "next offset to copy", sortable: true, numeric: true, cell: (r) => num(r.next_offset) },
      { key: "end_offset", label: "source end (last seen)", sortable: true, numeric: true, cell: (r) => num(r.end_offset) },
      { key: "records", label: "records behind", sortable: true, numeric: true, cell: (r) => num(r.records) },
      { key: "seconds", label: "seconds behind", sortable: true, numeric: true, cell: (r) => secs(r.seconds) },
      { key: "as_of", label: "as of", cell: (r) => when(r.as_of_ms) },
    ],
    load: async (s) => {
      const page = await get(`${base}/partitions?${query({ q: s.q, sort: s.sort, desc: s.desc, offset: s.offset, limit: s.limit })}`);
      return { rows: page.partitions, matched: page.matched, total: page.total, topics: page.topics };
    },
  });
}

function groupsTable(base, details) {
  return pagedTable({
    id: "groups",
    caption: "Consumer groups with checkpoints on the target",
    filterLabel: "Filter groups",
    limit: 20,
    columns: [
      { key: "group", label: "group", cell: (g) => g.group },
      { key: "partitions", label: "partitions", numeric: true, cell: (g) => num(g.partitions) },
      { key: "newest", label: "newest checkpoint", numeric: true, cell: (g) => secs(g.newest_age_s) },
      { key: "oldest", label: "oldest checkpoint", numeric: true, cell: (g) => secs(g.oldest_age_s) },
      { key: "show", label: "positions", cell: (g) => h("button", { type: "button", onclick: () => positions(base, g.group, details) }, "Show") },
    ],
    load: async (s) => {
      const page = await get(`${base}/group-summaries?${query({ q: s.q, offset: s.offset, limit: s.limit })}`);
      return { rows: page.groups, matched: page.matched, total: page.total };
    },
  });
}

async function positions(base, group, details) {
  const answer = await get(`${base}/offsets?${query({ group })}`);
  fill(details,
    h("h3", {}, `Where ${group} resumes on the target`),
    h("table", { class: "grid", id: "group-offsets" },
      h("thead", {}, h("tr", {}, ["topic", "partition", "offset on target", "committed on source", "checkpoint age"].map((c) => h("th", { scope: "col" }, c)))),
      h("tbody", {}, answer.offsets.map((o) => h("tr", {},
        h("td", {}, o.topic), h("td", { class: "num" }, o.partition), h("td", { class: "num" }, num(o.offset)),
        h("td", { class: "num" }, num(o.upstream_offset)), h("td", { class: "num" }, secs(o.checkpoint_age_ms / 1000)))))));
  details.focus();
}

export function renderFlow(main, source, target, alive) {
  const base = flowPath(source, target);
  const title = h("h1", {}, `${source}->${target}`);
  const head = h("div", { class: "flow-head" });
  const grid = h("div", { class: "figures" });
  const chart = h("div", { class: "charts" });
  const audit = h("div", { id: "audit" });
  const topics = h("div", { id: "topics" });
  const details = h("div", { id: "group-details", tabindex: "-1" });
  const partitions = partitionsTable(base);
  const groups = groupsTable(base, details);
  fill(main, title, head, grid,
    h("h2", {}, "Last hour"), chart,
    h("h2", {}, "Topics"), topics,
    h("h2", {}, "Partitions"), partitions.element,
    h("h2", {}, "Consumer groups"), groups.element, details,
    h("h2", {}, "Audit"), audit);
  const unsubscribe = subscribe((overview) => {
    if (!alive()) return unsubscribe();
    const flow = overview.flows.find((f) => f.source === source && f.target === target);
    if (!flow) return fill(head, h("p", {}, "This translator does not serve the flow."));
    fill(head, badge(flow.health), flow.stale ? h("span", { class: "badge stale" }, "stale") : null,
      h("a", { href: `#/flow/${encodeURIComponent(source)}/${encodeURIComponent(target)}/dr`, class: "action" }, "Disaster recovery"),
      flow.reasons.length ? h("ul", { class: "reasons" }, flow.reasons.map((r) => h("li", {}, r))) : null);
    fill(grid, figures(flow));
    fill(audit, auditSection(flow));
  });
  every(3000, async () => {
    const page = await partitions.refresh();
    fill(topics, h("table", { class: "grid", id: "topic-table" },
      h("thead", {}, h("tr", {}, ["topic", "records behind", "seconds behind", "partitions behind"].map((c) => h("th", { scope: "col" }, c)))),
      h("tbody", {}, page.topics.map((t) => h("tr", {}, h("td", {}, t.topic), h("td", { class: "num" }, num(t.records)),
        h("td", { class: "num" }, secs(t.seconds)), h("td", { class: "num" }, num(t.partitions_behind)))))));
  }, alive);
  every(10000, () => groups.refresh(), alive);
  every(5000, async () => {
    const history = await get(`${base}/history`);
    const times = history.samples.map((s) => s.ts_ms);
    fill(chart,
      lineChart("Records behind and seconds behind over the last hour", times, [
        { label: "records behind", cls: "s1", values: history.samples.map((s) => s.rpo_records) },
        { label: "seconds behind", cls: "s2", values: history.samples.map((s) => s.rpo_seconds) },
      ]),
      lineChart("Replication latency (heartbeats) over the last hour", times, [
        { label: "latency ms", cls: "s3", values: history.samples.map((s) => s.latency_ms) },
        { label: "heartbeat age s", cls: "s1", values: history.samples.map((s) => s.heartbeat_age_s) },
      ]));
  }, alive);
}
