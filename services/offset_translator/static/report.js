// A DR report (a failover or failback, or a dry run's plan) as tables: the same parts `strait failover` prints.

import { h, num, secs, when } from "./dom.js";

function table(id, caption, heads, rows) {
  return h("div", { class: "scroll" },
    h("table", { class: "grid", id },
      h("caption", {}, caption),
      h("thead", {}, h("tr", {}, heads.map((c) => h("th", { scope: "col" }, c)))),
      h("tbody", {}, rows.length ? rows : h("tr", {}, h("td", { colspan: heads.length }, "none")))));
}

const POINTS_SHOWN = 20;

function pointsCaption(count) {
  const shown = count > POINTS_SHOWN ? `, the ${POINTS_SHOWN} most behind shown (GET …/dr has every one)` : "";
  return `Failover points: ${count} partitions${shown}`;
}

/** The partitions the failover left most behind: the ones an operator looks at; all of them are in the API. */
function mostBehind(points) {
  return [...points]
    .sort((a, b) => (b.records_behind ?? 0) - (a.records_behind ?? 0) || a.topic.localeCompare(b.topic) || a.partition - b.partition)
    .slice(0, POINTS_SHOWN);
}

export function renderReport(report, id) {
  const mode = report.planned ? "planned" : "unplanned";
  const what = report.dry_run ? "plan (dry run): nothing changed" : `report ${report.id}`;
  const rpo = report.rpo;
  const moves = report.groups_moved.flatMap((move) => move.partitions.map((p) => h("tr", { "data-group": move.group },
    h("td", {}, move.group), h("td", {}, move.cluster), h("td", {}, p.topic), h("td", { class: "num" }, p.partition),
    h("td", { class: "num" }, num(p.previous_offset)), h("td", { class: "num offset" }, p.offset), h("td", {}, p.action), h("td", {}, p.how))));
  return h("section", { id, class: "report", "aria-label": `${report.kind} ${what}` },
    h("h3", {}, `${report.kind} of ${report.flow} (${mode}): ${what}`),
    h("p", { class: "muted" }, `by ${report.by || "–"}, ${when(report.started_ms)} to ${when(report.ended_ms)}`),
    rpo ? h("p", { class: rpo.records ? "warn-text" : "ok-text" },
      `RPO ${num(rpo.records)} records, oldest ${secs(rpo.seconds)} (${num(rpo.partitions_behind)} of ${num(rpo.partitions)} partitions behind)`) : null,
    table(`${id}-moves`, `Groups moved: ${report.groups_moved.length}`,
      ["group", "cluster", "topic", "partition", "previous", "offset", "action", "how"], moves),
    report.groups_skipped.length
      ? table(`${id}-skipped`, `Groups not moved: ${report.groups_skipped.length}`, ["group", "why"],
        report.groups_skipped.map((s) => h("tr", {}, h("td", {}, s.group), h("td", {}, s.reason))))
      : null,
    report.tail.length
      ? table(`${id}-tail`, "Un-mirrored tail of the old primary (kept there)", ["topic", "partition", "first", "end", "records", "for the groups"],
        report.tail.map((t) => h("tr", {}, h("td", {}, t.topic), h("td", { class: "num" }, t.partition), h("td", { class: "num" }, t.first),
          h("td", { class: "num" }, t.end), h("td", { class: "num" }, num(t.records)), h("td", {}, t.choice))))
      : null,
    table(`${id}-points`, pointsCaption(report.points.length),
      ["topic", "partition", "remote topic", "first source offset not copied", "target end", "records behind"],
      mostBehind(report.points).map((p) => h("tr", {}, h("td", {}, p.topic), h("td", { class: "num" }, p.partition), h("td", {}, p.remote_topic),
        h("td", { class: "num" }, p.source_offset), h("td", { class: "num" }, p.target_offset), h("td", { class: "num" }, num(p.records_behind))))),
    report.notes.length ? h("ul", { class: "notes" }, report.notes.map((n) => h("li", {}, n))) : null);
}
