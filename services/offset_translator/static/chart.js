// A line chart in SVG, built node by node (no inline style: the page's CSP allows none): one series per figure,
// each on its own scale, over the samples' time.

const NS = "http://www.w3.org/2000/svg";
const W = 640;
const H = 160;
const PAD = 28;

function svg(tag, attrs) {
  const el = document.createElementNS(NS, tag);
  for (const [key, value] of Object.entries(attrs)) el.setAttribute(key, String(value));
  return el;
}

/** series: [{label, cls, values: [number|null]}], times: [epoch ms]. */
export function lineChart(title, times, series) {
  const root = svg("svg", { viewBox: `0 0 ${W} ${H}`, class: "chart", role: "img", "aria-label": title });
  const desc = svg("title", {});
  desc.textContent = title;
  root.append(desc, svg("line", { x1: PAD, y1: H - PAD, x2: W - 4, y2: H - PAD, class: "axis" }));
  if (times.length < 2) {
    const note = svg("text", { x: W / 2, y: H / 2, "text-anchor": "middle", class: "note" });
    note.textContent = "collecting samples…";
    root.append(note);
    return root;
  }
  const t0 = times[0];
  const span = Math.max(1, times[times.length - 1] - t0);
  const x = (t) => PAD + ((t - t0) / span) * (W - PAD - 4);
  series.forEach((s, i) => {
    const known = s.values.filter((v) => v !== null && v !== undefined);
    const max = Math.max(1, ...known);
    const y = (v) => H - PAD - (v / max) * (H - 2 * PAD);
    let d = "";
    s.values.forEach((v, j) => {
      if (v === null || v === undefined) return;
      d += `${d ? "L" : "M"}${x(times[j]).toFixed(1)},${y(v).toFixed(1)}`;
    });
    root.append(svg("path", { d: d || "M0,0", class: `series ${s.cls}` }));
    const label = svg("text", { x: PAD + 4 + i * 210, y: 14, class: `legend ${s.cls}` });
    label.textContent = `${s.label} (max ${Math.round(max).toLocaleString("en")})`;
    root.append(label);
  });
  const span_min = svg("text", { x: W - 4, y: H - 8, "text-anchor": "end", class: "note" });
  span_min.textContent = `last ${Math.max(1, Math.round(span / 60000))} min`;
  root.append(span_min);
  return root;
}
