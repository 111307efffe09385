// A stacked bar chart drawn as SVG by hand (no library): messages per minute by state on the
// overview. Colours come from app.css (classes wb-chart-<key>), tooltips from <title>, and the
// same numbers are in a table under it for screen readers and copying.

import { h } from "./ui.js";

const SVG = "http://www.w3.org/2000/svg";
const WIDTH = 1000;
const HEIGHT = 240;
const PAD = { top: 12, right: 12, bottom: 28, left: 44 };
const MAX_BARS = 120;
const pad = (n) => String(n).padStart(2, "0");

function s(tag, attrs = {}, ...children) {
  const el = document.createElementNS(SVG, tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value !== undefined && value !== null) el.setAttribute(key, String(value));
  }
  for (const child of children) {
    if (child === null || child === undefined) continue;
    el.append(child instanceof Node ? child : String(child));
  }
  return el;
}

const clock = (date) => `${pad(date.getHours())}:${pad(date.getMinutes())}`;

/** A step of 1, 2 or 5 times a power of ten giving at most `count` steps up to `max`. */
function niceStep(max, count = 4) {
  const raw = Math.max(1, max / count);
  const power = 10 ** Math.floor(Math.log10(raw));
  for (const m of [1, 2, 5, 10]) if (m * power >= raw) return m * power;
  return 10 * power;
}

/**
 * Buckets `[{start, counts: {<key>: n, ...}}]` (oldest first, `bucketSeconds` each), merged into at most
 * 120 bars. Answers [{start, end, values: {key: n}, total}].
 */
function bars(buckets, keys, bucketSeconds) {
  const group = Math.max(1, Math.ceil(buckets.length / MAX_BARS));
  const out = [];
  for (let i = 0; i < buckets.length; i += group) {
    const part = buckets.slice(i, i + group);
    const values = Object.fromEntries(keys.map((k) => [k, part.reduce((sum, b) => sum + (Number(b.counts[k]) || 0), 0)]));
    const start = new Date(part[0].start);
    const end = new Date(new Date(part[part.length - 1].start).getTime() + bucketSeconds * 1000);
    out.push({ start, end, values, total: keys.reduce((sum, k) => sum + values[k], 0) });
  }
  return out;
}

/**
 * The chart: `keys` in stacking order (bottom first), `labels` their names. Answers a <figure>
 * holding the SVG, its legend and a table of the numbers (in a <details>).
 */
export function stackedBarChart({ buckets, keys, labels = {}, bucketSeconds = 60, title, caption }) {
  const data = bars(buckets, keys, bucketSeconds);
  const minutes = data.length ? Math.round((data[0].end - data[0].start) / 60000) : 1;
  const max = Math.max(0, ...data.map((b) => b.total));
  const step = niceStep(max);
  const top = Math.max(step, Math.ceil(max / step) * step);
  const innerW = WIDTH - PAD.left - PAD.right;
  const innerH = HEIGHT - PAD.top - PAD.bottom;
  const y = (v) => PAD.top + innerH - (v / top) * innerH;
  const slot = data.length ? innerW / data.length : innerW;
  const barW = Math.max(1, slot * 0.8);

  const svg = s("svg", {
    viewBox: `0 0 ${WIDTH} ${HEIGHT}`,
    class: "wb-chart-svg",
    role: "img",
    "aria-label": `${title}: ${data.reduce((sum, b) => sum + b.total, 0)} in all, at most ${max} per ${minutes === 1 ? "minute" : `${minutes} minutes`}`,
  });
  // grid lines and the y axis
  for (let v = 0; v <= top; v += step) {
    svg.append(
      s("line", { x1: PAD.left, x2: WIDTH - PAD.right, y1: y(v), y2: y(v), class: v === 0 ? "wb-chart-axis" : "wb-chart-grid" }),
      s("text", { x: PAD.left - 6, y: y(v) + 4, "text-anchor": "end", class: "wb-chart-tick" }, String(v)),
    );
  }
  // the bars
  data.forEach((bar, i) => {
    const x = PAD.left + i * slot + (slot - barW) / 2;
    const g = s("g", { class: "wb-chart-bar", "data-start": bar.start.toISOString(), "data-total": bar.total });
    let base = 0;
    for (const key of keys) {
      const v = bar.values[key];
      if (!v) continue;
      g.append(s("rect", { x, y: y(base + v), width: barW, height: Math.max(0.5, y(base) - y(base + v)), class: `wb-chart-${key}`, "data-key": key, "data-value": v }));
      base += v;
    }
    // the whole column answers the tooltip, also where it is empty
    g.append(
      s("rect", { x: PAD.left + i * slot, y: PAD.top, width: slot, height: innerH, class: "wb-chart-hit" }),
      s(
        "title",
        {},
        `${clock(bar.start)}–${clock(bar.end)}: ${bar.total} ` +
          (bar.total ? `(${keys.filter((k) => bar.values[k]).map((k) => `${bar.values[k]} ${labels[k] || k}`).join(", ")})` : ""),
      ),
    );
    svg.append(g);
  });
  // time labels: about six along the x axis
  const every = Math.max(1, Math.round(data.length / 6));
  data.forEach((bar, i) => {
    if (i % every !== 0) return;
    svg.append(s("text", { x: PAD.left + i * slot + slot / 2, y: HEIGHT - 8, "text-anchor": "middle", class: "wb-chart-tick" }, clock(bar.start)));
  });
  if (!max) {
    svg.append(s("text", { x: PAD.left + innerW / 2, y: PAD.top + innerH / 2, "text-anchor": "middle", class: "wb-chart-none" }, "No messages in this window"));
  }

  const legend = h(
    "ul",
    { class: "wb-legend-inline wb-chart-legend", "aria-label": "Legend" },
    keys.map((k) => h("li", {}, h("span", { class: `wb-swatch wb-chart-swatch-${k}`, "aria-hidden": "true" }), labels[k] || k)),
  );
  const rows = data.filter((b) => b.total);
  const numbers = h(
    "details",
    { class: "wb-legend wb-chart-numbers" },
    h("summary", {}, "The numbers"),
    rows.length
      ? h(
          "div",
          { class: "wb-table-wrap" },
          h(
            "table",
            { class: "wb-table" },
            h("thead", {}, h("tr", {}, h("th", { scope: "col" }, "From"), keys.map((k) => h("th", { scope: "col" }, labels[k] || k)), h("th", { scope: "col" }, "All"))),
            h("tbody", {}, rows.map((b) => h("tr", {}, h("td", {}, clock(b.start)), keys.map((k) => h("td", { class: "wb-num" }, String(b.values[k]))), h("td", { class: "wb-num" }, String(b.total))))),
          ),
        )
      : h("p", { class: "wb-help" }, "None in this window."),
  );
  return h("figure", { class: "wb-chart" }, svg, h("figcaption", {}, legend, caption || null), numbers);
}
