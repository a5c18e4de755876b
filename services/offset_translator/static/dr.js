// Disaster recovery of a flow: readiness, the failover plan (a dry run) as tables, the action after a confirmation
// (the token is asked for when the translator answers 401), the report; failback the same way.

import { ApiError, get, post } from "./api.js";
import { confirmAction } from "./dialogs.js";
import { fill, flowPath, h, when } from "./dom.js";
import { every } from "./live.js";
import { renderReport } from "./report.js";

function options(kind) {
  const mode = h("select", { id: `${kind}-mode` },
    h("option", { value: "auto" }, "planned if the source answers"),
    h("option", { value: "planned" }, "planned (drain to RPO 0)"),
    h("option", { value: "unplanned" }, "unplanned (go on with what reached the target)"));
  const producers = h("input", { type: "checkbox", id: `${kind}-ignore-producers` });
  const groups = h("input", { type: "text", id: `${kind}-groups`, placeholder: "all groups" });
  const tail = h("select", { id: `${kind}-tail` }, h("option", { value: "deliver" }, "deliver"), h("option", { value: "skip" }, "skip"));
  const fields = h("div", { class: "options" },
    kind === "failover" ? [h("label", { for: mode.id }, "Mode"), mode] : [h("label", { for: tail.id }, "Old primary's tail"), tail],
    h("label", { for: groups.id }, "Groups (regex)"), groups,
    h("label", { for: producers.id, class: "check" }, producers, " go on although producers wrote lately"));
  const body = (dryRun) => {
    const request = { dry_run: dryRun, ignore_producers: producers.checked, groups: groups.value.trim() || null };
    if (kind === "failover") request.planned = { auto: null, planned: true, unplanned: false }[mode.value];
    else request.tail = tail.value;
    return request;
  };
  return { fields, body };
}

function failure(error) {
  const why = error instanceof ApiError && error.status === 401
    ? "refused: this action needs the translator's token"
    : `refused (${error.status ?? "?"}): ${error.message}`;
  return h("p", { class: "bad-text", role: "alert" }, why);
}

let shownReport = null; // the id of the report an action just showed: the newest report below would repeat it

function actionBlock(base, flowName, kind, out, onDone) {
  const { fields, body } = options(kind);
  const busy = h("span", { class: "muted", "aria-live": "polite" });
  const run = async (dryRun) => {
    if (!dryRun) {
      const sure = await confirmAction(`${kind === "failover" ? "Fail over" : "Fail back"} ${flowName}?`,
        kind === "failover"
          ? `This stops ${flowName} for good (until a failback) and moves its consumer groups to the target.`
          : `This copies the target's new records back, moves the groups back and resumes ${flowName}.`,
        kind === "failover" ? "Fail over" : "Fail back");
      if (!sure) return;
    }
    fill(busy, dryRun ? "planning…" : "running…");
    try {
      const report = await post(`${base}/dr/${kind}`, body(dryRun));
      fill(out, renderReport(report, dryRun ? `${kind}-plan` : `${kind}-report`));
      if (!dryRun) {
        shownReport = report.id;
        onDone();
      }
    } catch (error) {
      fill(out, failure(error));
    } finally {
      fill(busy, "");
    }
  };
  const label = kind === "failover" ? "failover" : "failback";
  return h("section", { class: "action-block", id: `${kind}-block` },
    h("h2", {}, kind === "failover" ? "Failover" : "Failback"), fields,
    h("div", { class: "actions" },
      h("button", { type: "button", id: `${kind}-plan-button`, onclick: () => run(true) }, `Plan ${label} (dry run)`),
      h("button", { type: "button", id: `${kind}-run-button`, class: "danger", onclick: () => run(false) }, `Run ${label}…`),
      busy),
    out);
}

export function renderDr(main, source, target, alive) {
  shownReport = null;
  const base = flowPath(source, target);
  const name = `${source}->${target}`;
  const state = h("div", { id: "dr-state" });
  const check = h("div", { id: "dr-check" });
  const last = h("div", { id: "dr-last" });
  const refreshState = async () => {
    const dr = await get(`${base}/dr`);
    fill(state, dr.state
      ? h("p", {}, `State: `, h("strong", {}, dr.state.state), ` since ${when(dr.state.ts)} (${dr.state.action ?? "–"} by ${dr.state.by || "–"})`)
      : h("p", {}, "State: active (no disaster-recovery action has run)."));
    const repeat = dr.last_report && dr.last_report.id === shownReport;
    fill(last, dr.last_report && !repeat ? [h("h2", {}, "Newest report"), renderReport(dr.last_report, "last-report")] : null);
  };
  const runCheck = async () => {
    fill(check, h("p", { class: "muted" }, "checking…"));
    try {
      const answer = await get(`${base}/dr/check`);
      fill(check, answer.ready
        ? h("p", { class: "ok-text" }, "Ready: the flow could fail over and back now.")
        : [h("p", { class: "warn-text" }, `Not ready: ${answer.problems.length} problems`),
          h("ul", {}, answer.problems.map((p) => h("li", {}, p)))]);
    } catch (error) {
      fill(check, failure(error));
    }
  };
  fill(main,
    h("h1", {}, `Disaster recovery: ${name}`),
    h("p", { class: "muted" }, "Nothing here acts without the translator's token; a plan changes nothing."),
    state,
    h("section", {}, h("h2", {}, "Readiness"),
      h("button", { type: "button", id: "check-button", onclick: runCheck }, "Check readiness"), check),
    actionBlock(base, name, "failover", h("div", { id: "failover-out" }), refreshState),
    actionBlock(base, name, "failback", h("div", { id: "failback-out" }), refreshState),
    last);
  every(5000, refreshState, alive);
}
