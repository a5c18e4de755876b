// Live data: the overview every POLL_MS (every page needs it: the banner, the flow list), and the banner that says
// when what the page shows is stale: the translator lost a cluster, or the page cannot reach the translator.

import { get, onReachability } from "./api.js";
import { fill, h, when } from "./dom.js";

export const POLL_MS = 2000;
const subscribers = new Set();
let latest = null;
let unreachable = null;

/** Calls `fn(overview)` now (if known) and after every refresh; returns the unsubscribe function. */
export function subscribe(fn) {
  subscribers.add(fn);
  if (latest) fn(latest);
  return () => subscribers.delete(fn);
}

export function overview() {
  return latest;
}

/** Run `work` now and every `ms` while `alive()` says the page still shows it. */
export function every(ms, work, alive) {
  const tick = async () => {
    if (!alive()) return;
    try {
      await work();
    } catch (error) {
      console.warn(error);
    }
    if (alive()) setTimeout(tick, ms);
  };
  tick();
}

function renderBanner() {
  const banner = document.getElementById("banner");
  const lines = [];
  if (unreachable) {
    lines.push(h("p", {}, `The translator does not answer since ${when(unreachable)}: everything shown is as of then.`));
  }
  for (const feed of latest?.feeds ?? []) {
    if (feed.stale) lines.push(h("p", {}, `Stale data: ${feed.reason}. Figures about ${feed.cluster} are as last read.`));
  }
  banner.hidden = lines.length === 0;
  banner.classList.toggle("bad", Boolean(unreachable));
  fill(banner, lines);
}

export function start() {
  onReachability((state) => {
    unreachable = state.ok ? null : state.since;
    renderBanner();
  });
  every(
    POLL_MS,
    async () => {
      latest = await get("/v1/cockpit/overview");
      fill(document.getElementById("updated"), `updated ${when(latest.as_of_ms)}`);
      renderBanner();
      for (const fn of subscribers) fn(latest);
    },
    () => true,
  );
}
