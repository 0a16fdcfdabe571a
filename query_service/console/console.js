// The Bindery console: plain JavaScript, no build step, no external requests.
// Search goes to the service's own POST /search; the panels read /console/api/*.
"use strict";

const $ = (sel) => document.querySelector(sel);

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === "class") node.className = v; else node.setAttribute(k, v);
  }
  for (const c of children) node.append(c instanceof Node ? c : document.createTextNode(String(c ?? "")));
  return node;
}

function headers() {
  const h = { "content-type": "application/json" };
  const key = sessionStorage.getItem("bindery-api-key");
  if (key) h["x-api-key"] = key;
  return h;
}

async function getJSON(path, options = {}) {
  const res = await fetch(path, { headers: headers(), ...options });
  const body = await res.json().catch(() => ({}));
  if (!res.ok) {
    const detail = Array.isArray(body.detail) ? body.detail.join("; ") : (body.detail || body.error || res.statusText);
    throw new Error(`${res.status}: ${detail}`);
  }
  return body;
}

const when = (t) => (t ? new Date(t * 1000).toLocaleString() : "-");
const fmt = (x, d = 4) => (typeof x === "number" ? x.toFixed(d) : "-");

// -- search ---------------------------------------------------------------------------------
async function search(event) {
  event.preventDefault();
  const status = $("#search-status");
  const body = { query: $("#query").value, k: Number($("#k").value) || 10 };
  const principal = $("#principal").value.trim();
  if (principal) body.principal = principal;
  const neighbours = Number($("#neighbours").value);
  if (neighbours > 0) body.neighbours = neighbours;
  status.textContent = "searching…";
  status.className = "status";
  $("#hits").replaceChildren();
  $("#timings").replaceChildren();
  try {
    const t0 = performance.now();
    const r = await getJSON("/search", { method: "POST", body: JSON.stringify(body) });
    const ms = performance.now() - t0;
    status.textContent = `${r.hits.length} hits from generation ${r.generation} (${r.generation_name}) in ${ms.toFixed(0)} ms`
      + (r.reason ? ` — ${r.reason}` : "");
    renderTimings(r.trace || {});
    for (const h of r.hits) $("#hits").append(renderHit(h));
  } catch (e) {
    status.textContent = `search failed: ${e.message}`;
    status.className = "status error";
  }
}

function renderTimings(trace) {
  const t = trace.timings || trace.timings_ms || {};
  // the trace names them `sparse_ms`, …: the unit is said once, after the number
  const parts = Object.entries(t).map(([k, v]) => `${k.replace(/_ms$/, "")} ${typeof v === "number" ? v.toFixed(1) : v} ms`);
  const counts = ["dense", "sparse"].filter((r) => Array.isArray(trace[r]))
    .map((r) => `${r}: ${trace[r].length} candidates`);
  $("#timings").append(el("p", { class: "status" }, [...counts, ...parts].join(" · ")));
  const a = trace.attribution;  // a pasted reply: whose message its attribution line asked for
  if (a) {
    const who = (a.names || []).join(" ") || a.address || a.message_id || "?";
    const whenText = [a.day, a.time].filter(Boolean).join(" ");
    $("#timings").append(el("p", { class: "status" },
      `attribution line: ${who}${whenText ? `, ${whenText}` : ""} (${a.units} of their messages found)`));
  }
}

function renderHit(h) {
  const mail = h.email ? [h.email.from, (h.email.date || "").slice(0, 10)].filter(Boolean).join(", ") : "";
  const where = [(h.heading_path || []).join(" › "), mail].filter(Boolean).join(" · ") || "-";
  const ranks = Object.entries(h.ranks || {}).map(([k, v]) => `${k} #${v}`).join(", ") || "fused only";
  return el("li", { class: "hit" },
    el("div", { class: "hit-head" },
      el("span", { class: "hit-doc" },
        `${h.title ? `${h.title} — ` : ""}${h.source}:${h.doc}${h.page ? ` p.${h.page}` : ""}`),
      el("span", { class: "hit-where" }, where),
      el("span", { class: "ranks" }, `score ${fmt(h.score)} · ${ranks}`)),
    ...context(h.before, "before"),
    el("p", { class: "hit-text" }, (h.text || "").slice(0, 600)),
    ...context(h.after, "after"));
}

// neighbour expansion: the document's text around the hit, muted, nearest part shown
function context(texts, side) {
  if (!texts || !texts.length) return [];
  const joined = texts.join(" ");
  const shown = side === "before" ? `… ${joined.slice(-300)}` : `${joined.slice(0, 300)} …`;
  return [el("p", { class: `hit-context ${side}` }, shown)];
}

// -- generations ----------------------------------------------------------------------------
async function loadGenerations() {
  const tbody = $("#generations-table tbody");
  try {
    const g = await getJSON("/console/api/generations");
    const roles = { [g.live]: "live", [g.previous]: "previous", [g.candidate]: "candidate" };
    const other = g.serving && g.live != null && g.serving.id !== g.live;
    const elsewhere = other || Boolean(g.serving && g.serving.warning);
    if (other) roles[g.serving.id] = "serving";
    $("#binding").textContent = (g.binding
      ? `binding version ${g.binding.version}, flipped ${when(g.binding.flipped_at)} by ${g.binding.flipped_by || "-"}`
      : "no live binding yet")
      // the bound generation could not be opened: searches still come from the one served before
      + (elsewhere ? ` — searches are answered from generation ${g.serving.id} (${g.serving.name})`
        + (g.serving.warning ? `: ${g.serving.warning}` : ": the live one could not be opened") : "");
    $("#binding").classList.toggle("error", Boolean(elsewhere));
    tbody.replaceChildren(...g.generations.map((x) => el("tr", {},
      el("td", {}, roles[x.id] || ""), el("td", { class: "num" }, x.id), el("td", {}, x.name), el("td", {}, x.status),
      el("td", { class: "num" }, x.counts.documents ?? "-"), el("td", { class: "num" }, x.counts.chunks ?? "-"),
      el("td", {}, when(x.created_at)),
      el("td", { class: x.gate.passed === false ? "refused" : x.gate.passed ? "passed" : "" },
        // a forced promotion says who and why (`promote --force --reason`), as `bindery status --json` does
        x.forced_by ? `forced by ${x.forced_by}${x.force_reason ? `: ${x.force_reason}` : ""}`
          : x.gate.passed == null ? "not judged" : x.gate.passed ? "passed" : "refused"),
      el("td", { class: "wrap" }, el("code", {}, Object.entries(x.stage_versions).map(([k, v]) => `${k}=${v}`).join(" "))))));
    $("#gate-reports").replaceChildren(...g.generations.filter((x) => x.gate.reasons.length).slice(0, 5).map(gateReport));
  } catch (e) {
    tbody.replaceChildren(el("tr", {}, el("td", { class: "error", colspan: "9" }, e.message)));
  }
}

function gateReport(x) {
  const metrics = Object.keys(x.gate.candidate || {});
  const rows = metrics.map((m) => el("tr", {}, el("td", {}, m), el("td", { class: "num" }, fmt(x.gate.live[m])),
    el("td", { class: "num" }, fmt(x.gate.candidate[m])),
    // signed, as `bindery promote` prints it: a rise reads +0.0364, not like a value
    el("td", { class: "num" }, typeof x.gate.delta[m] === "number" && x.gate.delta[m] >= 0 ? `+${fmt(x.gate.delta[m])}` : fmt(x.gate.delta[m]))));
  return el("div", { class: "gate" },
    el("strong", {}, `gate report for ${x.name}`),
    el("ul", {}, ...x.gate.reasons.map((r) => el("li", {}, r)), ...x.gate.warnings.map((w) => el("li", {}, `warning: ${w}`))),
    rows.length ? el("table", {}, el("thead", {}, el("tr", {}, ...["metric", "live", "candidate", "delta"].map((h) => el("th", {}, h)))),
      el("tbody", {}, ...rows)) : "",
    x.gate.regressed.length ? el("p", {}, `regressed: ${x.gate.regressed.map((q) => q.id).join(", ")}`) : "");
}

// -- evals ----------------------------------------------------------------------------------
const SERIES = ["recall@10", "mrr@10", "ndcg@10"];
const COLOURS = ["#2457c5", "#c54a24", "#1f8a4c", "#8a1f7a"];  // the legend's .series-N in console.css

function lineChart(container, labels, series) {
  if (!labels.length) {
    container.replaceChildren(el("p", { class: "status" }, "nothing measured yet"));
    return;
  }
  const ns = "http://www.w3.org/2000/svg";
  const w = 800, h = 220, pad = 36;
  const svg = document.createElementNS(ns, "svg");
  svg.setAttribute("viewBox", `0 0 ${w} ${h + 30}`);
  const x = (i) => pad + (labels.length === 1 ? (w - 2 * pad) / 2 : i * (w - 2 * pad) / (labels.length - 1));
  const y = (v) => h - pad / 2 - v * (h - pad);
  const add = (tag, attrs, text) => {
    const n = document.createElementNS(ns, tag);
    for (const [k, v] of Object.entries(attrs)) n.setAttribute(k, v);
    if (text !== undefined) n.textContent = text;
    svg.append(n);
  };
  for (const v of [0, 0.5, 1]) {
    add("line", { x1: pad, x2: w - pad, y1: y(v), y2: y(v), stroke: "#d8dde6" });
    add("text", { x: 4, y: y(v) + 4, "font-size": 11, fill: "#667085" }, v.toFixed(1));
  }
  labels.forEach((l, i) => add("text", { x: x(i), y: h + 16, "font-size": 11, "text-anchor": "middle", fill: "#667085" }, l));
  series.forEach((s, si) => {
    const pts = s.values.map((v, i) => [x(i), y(v ?? 0)]);
    add("polyline", { points: pts.map((p) => p.join(",")).join(" "), fill: "none", stroke: COLOURS[si % 4], "stroke-width": 2 });
    pts.forEach(([px, py]) => add("circle", { cx: px, cy: py, r: 3.5, fill: COLOURS[si % 4] }));
  });
  const legend = el("div", { class: "legend" }, ...series.map((s, si) => el("span", { class: `series-${si % 4}` }, `● ${s.name}`)));
  container.replaceChildren(svg, legend);
}

async function loadEvals() {
  try {
    const e = await getJSON("/console/api/evals");
    // one eval set's points only (the newest measurement's): scores of different sets are not
    // comparable (verdicts recorded before sets were named are told apart by their size)
    const digest = (g) => (g.eval_set && g.eval_set.digest) || null;
    const sameSet = (a, b) => (digest(a) && digest(b) ? digest(a) === digest(b) : a.cases === b.cases);
    const last = e.generations[e.generations.length - 1];
    const shown = last ? e.generations.filter((g) => sameSet(g, last)) : [];
    lineChart($("#eval-chart"), shown.map((g) => g.name),
      SERIES.map((m) => ({ name: m, values: shown.map((g) => g.metrics[m]) })));
    const other = e.generations.length - shown.length;
    $("#eval-set").textContent = last ? `measured on ${(last.eval_set && last.eval_set.path) || "the gate's eval set"}` +
      (last.cases ? ` (${last.cases} questions)` : "") +
      (other ? `; ${other} measurement${other === 1 ? "" : "s"} on other eval sets not charted` : "") : "";
    // trials of different `bindery tune` runs search different spaces: chart the latest run's
    // (its trials share the time the run recorded them)
    const latest = Math.max(...e.tune_trials.map((t) => t.at));
    const trials = e.tune_trials.filter((t) => t.at === latest);
    // the metric the run chose its best by (gate.metric), then its tie-breaker: charting a fixed
    // recall@10 showed flat lines and a "best" nothing on the page explained when tune chose on
    // mrr@10 (runs recorded before trials named their metric fall back to recall@10)
    const metric = (trials.find((t) => t.metric) || {}).metric || SERIES[0];
    const secondary = (trials.find((t) => t.secondary_metric) || {}).secondary_metric;
    // `bindery tune` stores each half as {metric: value}; a bare number is accepted too
    const half = (t, k, m = metric) => (typeof t[k] === "number" ? (m === metric ? t[k] : undefined) : (t[k] || {})[m]);
    // numbered as `bindery tune` prints them (0 is the configuration it started from)
    const label = (t, i) => t.name || `${t.index ?? i}${t.best ? " (best)" : ""}`;
    lineChart($("#tune-chart"), trials.map(label),
      ["tune", "check"].filter((k) => trials.some((t) => typeof half(t, k) === "number"))
        .map((k) => ({ name: `${k} half ${metric}`, values: trials.map((t) => half(t, k)) })));
    const fmt = (v) => (typeof v === "number" ? v.toFixed(3) : "–");
    const scores = (t, m) => `${m} tune ${fmt(half(t, "tune", m))}, check ${fmt(half(t, "check", m))}`;
    $("#tune-trials").replaceChildren(...trials.map((t, i) => el("li", t.best ? { class: "best" } : {},
      `${label(t, i)}: ${JSON.stringify(t.settings || {})} — ${scores(t, metric)}`
      + (secondary && secondary !== metric ? `; ${scores(t, secondary)}` : ""))));
  } catch (err) {
    $("#eval-chart").replaceChildren(el("p", { class: "error" }, err.message));
  }
}

// -- dead letters ---------------------------------------------------------------------------
async function loadDeadLetters() {
  const tbody = $("#dlq-table tbody");
  try {
    const rows = await getJSON("/console/api/dead-letters");
    tbody.replaceChildren(...(rows.length ? rows.map((d) => el("tr", {}, el("td", {}, when(d.at)), el("td", { class: "wrap" }, d.source),
      el("td", { class: "wrap" }, d.doc), el("td", {}, d.stage), el("td", {}, d.reason),
      // cut to 200 characters, visibly; the whole error on hover (and in `bindery dlq list --doc`)
      el("td", { class: "wrap", title: d.error || "" }, (d.error || "").length > 200 ? `${d.error.slice(0, 200)}…` : d.error || "")))
      : [el("tr", {}, el("td", { colspan: "6", class: "status" }, "the dead-letter table is empty"))]));
  } catch (e) {
    tbody.replaceChildren(el("tr", {}, el("td", { class: "error", colspan: "6" }, e.message)));
  }
}

// a key typed (or changed): the panels and a search already on the page are redone with it;
// once per key (Enter fires both the box's change and its form's submit)
function useKey() {
  const key = $("#api-key").value.trim();
  if (key === (sessionStorage.getItem("bindery-api-key") || "")) return;
  sessionStorage.setItem("bindery-api-key", key);
  refresh();
  if ($("#query").value.trim()) $("#search-form").requestSubmit();
}

function refresh() {
  loadGenerations();
  loadEvals();
  loadDeadLetters();
}

document.addEventListener("DOMContentLoaded", () => {
  const key = $("#api-key");
  key.value = sessionStorage.getItem("bindery-api-key") || "";
  key.addEventListener("change", useKey);
  // Enter in the key box submits its form: the CSP (form-action 'none') blocked that with a
  // console error and the search that had failed for want of a key stayed failed
  $("#credentials").addEventListener("submit", (e) => {
    e.preventDefault();
    useKey();
  });
  $("#search-form").addEventListener("submit", search);
  $("#query").addEventListener("keydown", (e) => {  // Enter searches as in a one-line box; Shift+Enter: a new line
    if (e.key === "Enter" && !e.shiftKey && !e.isComposing) {
      e.preventDefault();
      $("#search-form").requestSubmit();
    }
  });
  $("#query").addEventListener("input", () => {  // grow with a pasted message, up to ten lines
    $("#query").rows = Math.min(10, Math.max(1, $("#query").value.split("\n").length));
  });
  const q = new URLSearchParams(location.search).get("q");
  if (q) {
    $("#query").value = q;
    $("#search-form").requestSubmit();
  }
  refresh();
});
