#include "report/html_report_page.h"

namespace sd {

// Plain HTML, CSS and script, nothing fetched: the page opens from a file on a machine without
// network. The script reads the embedded JSON and draws the histogram and the timeline; when the
// timeline is drawn, #timeline gets data-spans-drawn (the count), which the tests check.
const char* html_report_page() {
  return R"HTML(<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>streamdet profile</title>
<style>
body { font: 14px/1.45 system-ui, sans-serif; margin: 24px; color: #1d2330; background: #fafbfc; }
h1 { font-size: 22px; margin: 0 0 4px; } h2 { font-size: 16px; margin: 28px 0 8px; }
.sub { color: #5b6472; font-size: 12px; }
.verdict { margin: 16px 0; padding: 12px 16px; border-left: 6px solid #e15759; background: #fff; font-size: 16px; }
.cards { display: flex; flex-wrap: wrap; gap: 12px; }
.card { background: #fff; border: 1px solid #e3e6ea; border-radius: 6px; padding: 10px 14px; min-width: 130px; }
.card b { display: block; font-size: 20px; } .card span { color: #5b6472; font-size: 12px; }
table { border-collapse: collapse; background: #fff; } td, th { border: 1px solid #e3e6ea; padding: 4px 8px; text-align: right; }
th { background: #f0f2f5; } td:first-child, th:first-child { text-align: left; }
.bar { height: 18px; border-radius: 3px; } .legend span { display: inline-block; margin-right: 14px; }
.legend i { display: inline-block; width: 12px; height: 12px; margin-right: 4px; vertical-align: -1px; border-radius: 2px; }
canvas { background: #fff; border: 1px solid #e3e6ea; display: block; }
.note { color: #5b6472; font-size: 12px; }
</style>
</head>
<body>
<h1>streamdet profile</h1>
<div class="sub" id="header"></div>
<div class="verdict" id="verdict"></div>
<div class="cards" id="cards"></div>
<h2>End-to-end against the inference stage</h2>
<div id="fps"></div>
<h2>Stages</h2>
<table id="stages"></table>
<h2>Per-frame latency, capture to output</h2>
<svg id="latency" width="760" height="200"></svg>
<h2>Timeline of the stages per thread</h2>
<div class="legend" id="legend"></div>
<p class="note">The whole run; click it to show the 300 ms around that moment below.</p>
<canvas id="timeline" width="1100" height="120"></canvas>
<canvas id="timeline-detail" width="1100" height="120" style="margin-top:8px"></canvas>
<p class="note" id="timeline-note"></p>
<h2>Drops and sources</h2>
<table id="sources"></table>
<h2 id="counting-title" hidden>Lines and zones</h2>
<table id="counting" hidden></table>
<script type="application/json" id="data">/*STREAMDET_REPORT_DATA*/</script>
<script>
"use strict";
// Names at the top level of a classic script share the window object: none may be one of its own (top, name, ...).
const D = JSON.parse(document.getElementById("data").textContent);
const P = D.profile;
const COLORS = ["#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948"];
const $ = (id) => document.getElementById(id);
const esc = (s) => String(s).replace(/[&<>"]/g, (c) => ({"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;"}[c]));
const f = (v, d = 1) => Number(v).toFixed(d);

$("header").textContent = [D.model, (P.sources || []).map((s) => s.uri).join(", "), "commit " + D.commit, D.machine,
  D.written].filter(Boolean).join(" | ");
$("verdict").textContent = P.verdict;

const totalDrops = Object.values(P.drops).reduce((a, b) => a + b, 0);
const cores = P.cores > 0 ? " of " + P.cores : "";
const cards = [["end-to-end FPS", f(P.e2e_fps, 2)], ["inference stage FPS", f(P.inference_fps, 2)], ["frames", P.frames],
  ["wall time", f(P.wall_ms / 1000, 2) + " s"], ["CPU cores used", f(P.cpu_ms / Math.max(P.wall_ms, 1e-9), 2) + cores],
  ["latency p50 / p99", f(P.latency_ms.p50) + " / " + f(P.latency_ms.p99) + " ms"], ["dropped", totalDrops]];
$("cards").innerHTML = cards.map(([k, v]) => `<div class="card"><b>${esc(v)}</b><span>${esc(k)}</span></div>`).join("");

const fpsTop = Math.max(P.e2e_fps, P.inference_fps, 1e-9);
$("fps").innerHTML = [["end-to-end", P.e2e_fps, "#4e79a7"], ["inference stage (its calls' time only)", P.inference_fps, "#e15759"]]
  .map(([k, v, c]) => `<div style="margin:4px 0"><div class="bar" style="width:${Math.max(1, 600 * v / fpsTop)}px;background:${c}"></div>` +
       `<span class="note">${esc(k)}: ${f(v, 2)} FPS</span></div>`).join("");

const cols = ["Stage", "Threads", "Hits", "Total ms", "Per hit ms", "% of wall", "p50 ms", "p99 ms", "On CPU ms", "Wait ms",
  "Blocked ms", "In", "Out", "Drops"];
$("stages").innerHTML = "<tr>" + cols.map((c) => `<th>${c}</th>`).join("") + "</tr>" + P.stages.filter((s) => s.hits > 0)
  .map((s) => "<tr>" + [s.stage, s.threads, s.hits, f(s.total_ms), f(s.per_hit_ms, 3), f(s.percent_of_wall), f(s.p50_ms, 3),
    f(s.p99_ms, 3), s.cpu_ms >= 0 ? f(s.cpu_ms) : "", f(s.wait_ms), f(s.blocked_ms), s.items_in, s.items_out, s.drops]
    .map((v) => `<td>${esc(v)}</td>`).join("") + "</tr>").join("");

// Latency histogram: bars on a log scale of ms, p50 and p99 marked.
(function drawLatency() {
  const svg = $("latency"), bins = D.latency_bins, W = 760, H = 200, L = 40, B = 30, R = 40;
  if (!bins.length) { svg.outerHTML = '<p class="note">No frame reached the outputs.</p>'; return; }
  const lo = Math.log(bins[0][0]), hi = Math.log(bins[bins.length - 1][1]), span = Math.max(hi - lo, 1e-9);
  const x = (ms) => L + (W - L - R) * (Math.log(ms) - lo) / span;
  const most = Math.max(...bins.map((b) => b[2]), 1);
  let out = "";
  for (const [a, b, n] of bins) {
    const h = (H - B - 10) * n / most;
    out += `<rect x="${x(a)}" y="${H - B - h}" width="${Math.max(1, x(b) - x(a) - 1)}" height="${h}" fill="#4e79a7"><title>${f(a, 2)}-${f(b, 2)} ms: ${n} frames</title></rect>`;
  }
  for (const [name, v, c] of [["p50", P.latency_ms.p50, "#59a14f"], ["p99", P.latency_ms.p99, "#e15759"]]) {
    if (!(v > 0)) continue;
    const xv = Math.min(Math.max(x(v), L), W - R);
    const right = xv > W / 2;  // the label on the side with room
    out += `<line x1="${xv}" x2="${xv}" y1="5" y2="${H - B}" stroke="${c}" stroke-width="2"/>` +
           `<text x="${right ? xv - 4 : xv + 4}" y="${name === "p50" ? 16 : 32}" fill="${c}" font-size="12" ` +
           `text-anchor="${right ? "end" : "start"}">${name} ${f(v)} ms</text>`;
  }
  out += `<line x1="${L}" x2="${W - R}" y1="${H - B}" y2="${H - B}" stroke="#888"/>`;
  for (let i = 0; i <= 4; ++i) {
    const ms = Math.exp(lo + span * i / 4);
    out += `<text x="${x(ms)}" y="${H - 10}" font-size="11" text-anchor="middle" fill="#5b6472">${f(ms, ms < 10 ? 2 : 0)} ms</text>`;
  }
  svg.innerHTML = out;
})();

// Timeline: one row per thread, one box per stage call, coloured by stage.
$("legend").innerHTML = D.stage_names.map((n, i) => `<span><i style="background:${COLORS[i]}"></i>${n}</span>`).join("");
// Rows in the order frames flow: readers, preprocessing, workers, sinks.
const FLOW = ["reader", "preprocess", "worker", "sink"];
const flowRank = (name) => { const i = FLOW.findIndex((k) => name.startsWith(k)); return i < 0 ? FLOW.length : i; };
const threads = D.threads.filter((t) => t.spans.length > 0)
  .sort((a, b) => flowRank(a.name) - flowRank(b.name) || a.name.localeCompare(b.name, undefined, {numeric: true}));
const ROW = 18, LABEL = 120;
function drawTimeline(canvas, t0, t1) {
  canvas.height = Math.max(40, threads.length * ROW + 24);
  const g = canvas.getContext("2d"), W = canvas.width - LABEL - 10, scale = W / Math.max(t1 - t0, 1e-9);
  g.clearRect(0, 0, canvas.width, canvas.height);
  g.font = "11px system-ui, sans-serif";
  let drawn = 0;
  threads.forEach((t, row) => {
    const y = row * ROW + 4;
    g.fillStyle = "#1d2330";
    g.fillText(t.name, 4, y + 12);
    for (const [stage, begin, dur] of t.spans) {
      if (begin + dur < t0 || begin > t1) continue;
      g.fillStyle = COLORS[stage] || "#999";
      g.fillRect(LABEL + (begin - t0) * scale, y, Math.max(1, dur * scale), ROW - 4);
      ++drawn;
    }
  });
  g.fillStyle = "#5b6472";
  const axisY = threads.length * ROW + 18;
  for (let i = 0; i <= 5; ++i) {
    const t = t0 + (t1 - t0) * i / 5;
    g.fillText(f(t, t1 - t0 < 10 ? 2 : 0) + " ms", LABEL + (t - t0) * scale - (i === 5 ? 40 : 0), axisY);
  }
  return drawn;
}
const overview = $("timeline"), detail = $("timeline-detail");
const wall = Math.max(P.wall_ms, 1e-3);
function showDetail(center) {
  const width = Math.min(wall, 300), t0 = Math.min(Math.max(center - width / 2, 0), wall - width);
  drawTimeline(detail, t0, t0 + width);
}
const drawn = drawTimeline(overview, 0, wall);
overview.dataset.spansDrawn = String(drawn);
showDetail(wall / 2);
overview.addEventListener("click", (e) => {
  const r = overview.getBoundingClientRect();
  showDetail((e.clientX - r.left - LABEL) / (overview.width - LABEL - 10) * wall);
});
$("timeline-note").textContent = (threads.length ? "" : "No spans were recorded. ") +
  (D.spans_truncated ? "The run was longer than the spans kept: the timeline shows its beginning." : "");

// Drops by reason and the sources' health.
const reasons = Object.keys(P.drops);
const health = {};
for (const h of D.health || []) health[h.uri] = h;
$("sources").innerHTML = "<tr><th>Source</th><th>Live</th><th>Read</th><th>Done</th>" + reasons.map((r) => `<th>${esc(r)}</th>`).join("") +
  "<th>Health</th><th>Reconnects</th><th>Outages</th><th>Down s</th></tr>" +
  P.sources.map((s) => {
    const h = health[s.uri] || {};
    return "<tr>" + [s.uri, s.live ? "yes" : "no", s.frames_read, s.frames_done, ...reasons.map((r) => s.drops[r]),
      h.state || "", h.reconnects ?? "", h.outages ?? "", h.outage_s !== undefined ? f(h.outage_s) : ""]
      .map((v) => `<td>${esc(v)}</td>`).join("") + "</tr>";
  }).join("");

// --line / --zone counts, when the run had some.
if (P.counting) {
  $("counting-title").hidden = $("counting").hidden = false;
  const byClass = (m) => Object.entries(m).map(([k, v]) => `${k} ${v}`).join(", ");
  const row = (cells) => "<tr>" + cells.map((v) => `<td>${esc(v)}</td>`).join("") + "</tr>";
  $("counting").innerHTML = "<tr><th>Source</th><th>Line or zone</th><th>In / entries</th><th>Out / exits</th>" +
    "<th>Inside at the end</th><th>Dwell max s</th><th>Dwell mean s</th><th>By class</th></tr>" +
    P.counting.lines.map((l) => row([l.source, "line " + l.line, l.in, l.out, "", "", "",
      "in: " + byClass(l.in_by_class) + "; out: " + byClass(l.out_by_class)])).join("") +
    P.counting.zones.map((z) => row([z.source, "zone " + z.zone, z.entries, z.exits, z.occupancy,
      f(z.dwell_max_ms / 1000), f(z.dwell_mean_ms / 1000), ""])).join("");
}
</script>
</body>
</html>
)HTML";
}

}  // namespace sd
