// Building the page from data node by node (no markup is ever parsed from what the API sends), and the
// formats every page shares.

/** An element: h("td", {class: "num"}, "12"); attributes starting with "on" become listeners. */
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value === null || value === undefined || value === false) continue;
    if (key.startsWith("on") && typeof value === "function") el.addEventListener(key.slice(2), value);
    else el.setAttribute(key, value === true ? "" : String(value));
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
}

/** Replace everything inside `el`. */
export function fill(el, ...children) {
  el.replaceChildren();
  append(el, children);
  return el;
}

export function num(value) {
  return value === null || value === undefined ? "–" : Number(value).toLocaleString("en");
}

export function secs(value) {
  if (value === null || value === undefined) return "–";
  if (value < 10) return `${Number(value).toFixed(1)} s`;
  if (value < 120) return `${Math.round(value)} s`;
  if (value < 7200) return `${Math.round(value / 60)} min`;
  return `${(value / 3600).toFixed(1)} h`;
}

export function millis(value) {
  return value === null || value === undefined ? "–" : `${num(Math.round(value))} ms`;
}

export function when(ms) {
  return ms ? new Date(ms).toLocaleTimeString("en-GB") : "–";
}

export const HEALTH_LABEL = { ok: "OK", warn: "Check", down: "Not copying", "failed-over": "Failed over" };

/** A health badge: the word says it, the colour only repeats it. */
export function badge(health) {
  return h("span", { class: `badge ${health}`, "data-health": health }, HEALTH_LABEL[health] ?? health);
}

/** Encoded path segments of a flow: /v1/flows/A/B */
export function flowPath(source, target) {
  return `/v1/flows/${encodeURIComponent(source)}/${encodeURIComponent(target)}`;
}
