// The cockpit's entry: a hash router over three pages (overview, a flow, its disaster recovery) and the live feed.

import { enterToken, forgetToken, token } from "./api.js";
import { fill, h } from "./dom.js";
import { renderDr } from "./dr.js";
import { renderFlow } from "./flow.js";
import { start, subscribe } from "./live.js";
import { renderOverview } from "./overview.js";

let generation = 0;

function navigation(overview) {
  const links = [h("li", {}, h("a", { href: "#/" }, "Overview"))];
  for (const flow of overview.flows) {
    const base = `#/flow/${encodeURIComponent(flow.source)}/${encodeURIComponent(flow.target)}`;
    links.push(h("li", {}, h("a", { href: base }, flow.flow)));
    links.push(h("li", {}, h("a", { href: `${base}/dr` }, `${flow.flow} DR`)));
  }
  links.push(
    h("li", {}, h("button", { type: "button", id: "enter-token", onclick: enterToken }, "Token…")),
    h("li", {}, h("button", { type: "button", id: "forget-token", disabled: !token(), onclick: onForget }, "Forget token")),
  );
  fill(document.getElementById("nav"), links);
}

function onForget() {
  forgetToken();
  document.getElementById("forget-token").disabled = true;
}

function route() {
  generation += 1;
  const mine = generation;
  const alive = () => mine === generation;
  const main = document.getElementById("main");
  const parts = location.hash.replace(/^#\/?/, "").split("/").map(decodeURIComponent);
  if (parts[0] === "flow" && parts.length >= 3) {
    if (parts[3] === "dr") renderDr(main, parts[1], parts[2], alive);
    else renderFlow(main, parts[1], parts[2], alive);
  } else {
    renderOverview(main, alive);
  }
}

window.addEventListener("hashchange", () => {
  route();
  document.getElementById("main").focus();
});
subscribe(navigation);
start();
route();
