// The live page (/): each source's MJPEG stream and the run's figures, polled from /stats once a
// second. Self-contained (no CDN, no font, no network beyond this server); a token given to the
// page as ?token= is passed on to its stream and /stats URLs.
#include "serve/http_server.h"

namespace sd {

const std::string& web_page_html() {
  static const std::string page = R"HTML(<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>streamdet live</title>
<style>
body{font:14px/1.4 system-ui,sans-serif;margin:0;background:#111;color:#ddd}
header{display:flex;gap:1em;align-items:baseline;padding:.6em 1em;background:#1c1c1c;border-bottom:1px solid #333}
h1{font-size:1.1em;margin:0}
.badge{padding:.1em .6em;border-radius:1em;font-weight:600}
.ok{background:#1d5e2a}.degraded{background:#7a5a00}.down,.offline{background:#7a1f1f}
main{display:grid;grid-template-columns:repeat(auto-fill,minmax(420px,1fr));gap:1em;padding:1em}
section{background:#1a1a1a;border:1px solid #333;border-radius:6px;padding:.6em}
img{width:100%;background:#000;display:block;border-radius:4px;min-height:60px}
table{border-collapse:collapse;width:100%;margin-top:.4em}
td,th{padding:.15em .4em;text-align:right;border-bottom:1px solid #2a2a2a}
td:first-child,th:first-child{text-align:left}
#verdict{padding:.6em 1em;background:#181818;border-bottom:1px solid #333}
.muted{color:#888}
</style></head><body>
<header><h1>streamdet live</h1><span id="status" class="badge offline">connecting</span>
<span class="muted">up <span id="uptime">0</span> s &middot; workers <span id="workers">?</span>, cores <span id="cores">?</span></span></header>
<div id="verdict">measuring...</div>
<main>
<section id="stages-card"><b>Stages</b> <span class="muted">(last <span id="window">0</span> s)</span>
<table id="stages"><thead><tr><th>stage</th><th>FPS</th><th>busy</th><th>ms/call</th><th>threads</th></tr></thead><tbody></tbody></table></section>
</main>
<script>
"use strict";
const token = new URLSearchParams(location.search).get("token");
const withToken = (path) => token ? path + "?token=" + encodeURIComponent(token) : path;
const main = document.querySelector("main");
const fmt = (v, d) => Number(v).toFixed(d);
const text = (id, v) => { const e = document.getElementById(id); if (e) e.textContent = v; };
let built = 0;

function buildSource(i) {
  const sec = document.createElement("section");
  sec.id = "source-" + i;
  sec.innerHTML = '<b id="name-' + i + '"></b> <span id="state-' + i + '" class="badge"></span>' +
    '<img id="stream-' + i + '" alt="source ' + i + '">' +
    '<table><tr><td>read / done FPS</td><td><span id="read-fps-' + i + '"></span> / <span id="done-fps-' + i + '"></span></td></tr>' +
    '<tr><td>frames read / done</td><td><span id="frames-read-' + i + '"></span> / <span id="frames-done-' + i + '"></span></td></tr>' +
    '<tr><td>queues (preprocess, inference, sink)</td><td id="queues-' + i + '"></td></tr>' +
    '<tr><td>drops</td><td id="drops-' + i + '"></td></tr>' +
    '<tr><td>live tracks</td><td id="tracks-' + i + '"></td></tr>' +
    '<tr><td>reconnects / outages / lost frames</td><td id="outages-' + i + '"></td></tr>' +
    '<tr><td>last error</td><td id="error-' + i + '" class="muted"></td></tr></table>';
  main.insertBefore(sec, document.getElementById("stages-card"));
  document.getElementById("stream-" + i).src = withToken("stream/" + i);
}

function render(s) {
  const status = document.getElementById("status");
  status.textContent = s.status; status.className = "badge " + s.status;
  text("uptime", fmt(s.uptime_seconds, 1)); text("workers", s.workers); text("cores", s.cores);
  text("window", fmt(s.window_seconds, 1)); text("verdict", s.verdict);
  const body = document.querySelector("#stages tbody");
  body.innerHTML = "";
  for (const st of s.stages) {
    if (!st.threads) continue;
    const tr = document.createElement("tr");
    tr.innerHTML = "<td>" + st.stage + "</td><td>" + fmt(st.fps, 1) + "</td><td>" + fmt(100 * st.busy, 0) + "%</td><td>" +
      fmt(st.mean_ms, 2) + "</td><td>" + st.threads + "</td>";
    body.appendChild(tr);
  }
  for (; built < s.sources.length; ++built) buildSource(built);
  for (const src of s.sources) {
    const i = src.index;
    text("name-" + i, src.source);
    const state = document.getElementById("state-" + i);
    state.textContent = src.state; state.className = "badge " + (src.up ? "ok" : (src.state === "ended" ? "" : "down"));
    text("read-fps-" + i, fmt(src.read_fps, 1)); text("done-fps-" + i, fmt(src.done_fps, 1));
    text("frames-read-" + i, src.frames_read); text("frames-done-" + i, src.frames_done);
    text("queues-" + i, [src.queues.preprocess, src.queues.inference, src.queues.sink].join(", "));
    text("drops-" + i, Object.entries(src.drops).filter(([, n]) => n > 0).map(([r, n]) => r + " " + n).join(", ") || "none");
    text("tracks-" + i, src.live_tracks ?? "not tracked");
    text("outages-" + i, src.reconnects + " / " + src.outages + " (" + fmt(src.outage_seconds, 1) + " s) / " + src.frames_lost);
    text("error-" + i, src.last_error || "");
  }
}

async function poll() {
  try {
    const r = await fetch(withToken("stats"), {cache: "no-store"});
    if (!r.ok) throw new Error("HTTP " + r.status);
    render(await r.json());
  } catch (e) {
    const status = document.getElementById("status");
    status.textContent = "offline"; status.className = "badge offline";
  }
  setTimeout(poll, 1000);
}
poll();
</script></body></html>
)HTML";
  return page;
}

}  // namespace sd
