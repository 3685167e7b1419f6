// The Lakestream web console: one page, plain JS, no dependencies.
//
// Every view is built with DOM calls (el() below turns strings into text
// nodes), never innerHTML, so topic names, group ids and record contents
// are shown as text whatever they contain.
//
// The page samples the broker every SAMPLE_MS (the current view's data,
// plus the counters behind the plots) and keeps up to HISTORY samples per
// series in memory: the plots show what happened since the page was opened.
"use strict";

const SAMPLE_MS = 3000;
const HISTORY = 120;
const API = "/api/v1";
// AWS S3 Standard request prices (USD per 1,000 requests); the page's own
// fields override them and are kept in localStorage.
const PRICE_DEFAULTS = { put: 0.005, get: 0.0004 };

// ------------------------------------------------------------------ helpers

function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "class") e.className = v;
    else if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, v);
  }
  for (const c of children.flat()) {
    if (c === null || c === undefined) continue;
    e.appendChild(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return e;
}

function fmt(n) {
  if (n === null || n === undefined || Number.isNaN(n)) return "–";
  if (typeof n !== "number") return String(n);
  return Number.isInteger(n) ? n.toLocaleString("en-US") : n.toLocaleString("en-US", { maximumFractionDigits: 3 });
}

function ago(ms) {
  if (!ms || ms <= 0) return "never";
  const s = Math.max(0, (Date.now() - ms) / 1000);
  return s < 120 ? s.toFixed(0) + " s ago" : (s / 60).toFixed(1) + " min ago";
}

function table(headers, rows, numeric) {
  return el("table", { class: "grid" },
    el("thead", {}, el("tr", {}, headers.map((h) => el("th", {}, h)))),
    el("tbody", {}, rows.map((r) => el("tr", {}, r.map((c, i) =>
      el("td", numeric && numeric.includes(i) ? { class: "num" } : {}, c))))));
}

function card(k, v) {
  return el("div", { class: "card" }, el("div", { class: "v" }, v), el("div", { class: "k" }, k));
}

function link(hash, text) {
  return el("a", { href: "#" + hash }, text);
}

// Path segments are user data (topic names): always encoded.
function seg(s) { return encodeURIComponent(s); }

async function getJson(path) {
  const r = await fetch(path, { headers: { Accept: "application/json" } });
  if (!r.ok) {
    let msg = r.status + " " + r.statusText;
    try { msg = (await r.json()).error.message; } catch (_) { /* not JSON */ }
    throw new Error(path + ": " + msg);
  }
  return r.json();
}

// /metrics (Prometheus text format) as {name: [{labels, value}]}; null when
// the broker has no /metrics.
async function getMetrics() {
  const r = await fetch("/metrics");
  if (!r.ok) return null;
  const out = {};
  for (const line of (await r.text()).split("\n")) {
    if (!line || line[0] === "#") continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{([^}]*)\})?\s+(\S+)/.exec(line);
    if (!m) continue;
    const labels = {};
    for (const l of (m[3] || "").matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) labels[l[1]] = l[2];
    (out[m[1]] = out[m[1]] || []).push({ labels, value: Number(m[4]) });
  }
  return out;
}

// ------------------------------------------------------------------ history

const series = new Map(); // key -> [{t, v}]

function sample(key, v) {
  if (v === null || v === undefined || Number.isNaN(v)) return;
  const s = series.get(key) || [];
  s.push({ t: Date.now(), v });
  if (s.length > HISTORY) s.shift();
  series.set(key, s);
}

// Per-second rate between successive samples of a counter.
function rates(key) {
  const s = series.get(key) || [];
  const out = [];
  for (let i = 1; i < s.length; i++) {
    const dt = (s[i].t - s[i - 1].t) / 1000;
    if (dt > 0) out.push({ t: s[i].t, v: Math.max(0, (s[i].v - s[i - 1].v) / dt) });
  }
  return out;
}

// An SVG line plot of points [{t, v}]: one circle per data point.
function plot(title, points, unit) {
  const W = 420, H = 150, L = 48, B = 20, T = 8, R = 8;
  const svg = document.createElementNS("http://www.w3.org/2000/svg", "svg");
  const ns = (tag, attrs) => {
    const e = document.createElementNS("http://www.w3.org/2000/svg", tag);
    for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
    return e;
  };
  svg.setAttribute("class", "plot");
  svg.setAttribute("width", W);
  svg.setAttribute("height", H);
  svg.setAttribute("data-points", points.length);
  svg.appendChild(ns("line", { class: "axis", x1: L, y1: H - B, x2: W - R, y2: H - B }));
  svg.appendChild(ns("line", { class: "axis", x1: L, y1: T, x2: L, y2: H - B }));
  const fig = el("figure", { class: "plot" }, el("figcaption", {}, title + (unit ? " (" + unit + ")" : "")));
  fig.appendChild(svg);
  if (!points.length) {
    const t = ns("text", { x: L + 8, y: H / 2 });
    t.textContent = "waiting for samples…";
    svg.appendChild(t);
    return fig;
  }
  const t0 = points[0].t, t1 = Math.max(points[points.length - 1].t, t0 + 1);
  const vmax = Math.max(1e-9, ...points.map((p) => p.v));
  const x = (t) => L + ((t - t0) / (t1 - t0)) * (W - L - R);
  const y = (v) => H - B - (v / vmax) * (H - B - T);
  const top = ns("text", { x: 2, y: T + 8 });
  top.textContent = fmt(Number(vmax.toPrecision(3)));
  svg.appendChild(top);
  const zero = ns("text", { x: 2, y: H - B });
  zero.textContent = "0";
  svg.appendChild(zero);
  const span = ns("text", { x: W - R - 60, y: H - 4 });
  span.textContent = ((t1 - t0) / 1000).toFixed(0) + " s";
  svg.appendChild(span);
  svg.appendChild(ns("polyline", {
    stroke: "#1769aa",
    points: points.map((p) => x(p.t).toFixed(1) + "," + y(p.v).toFixed(1)).join(" "),
  }));
  for (const p of points) {
    const c = ns("circle", { class: "point", cx: x(p.t).toFixed(1), cy: y(p.v).toFixed(1), r: 2, fill: "#1769aa" });
    const tip = ns("title", {});
    tip.textContent = fmt(p.v);
    c.appendChild(tip);
    svg.appendChild(c);
  }
  return fig;
}

// -------------------------------------------------------------------- views

async function viewCluster() {
  const [health, cluster, streams, tables] = await Promise.all([
    getJson("/health"), getJson(API + "/cluster"), getJson(API + "/streams?limit=1000"),
    getJson(API + "/tables?limit=1000")]);
  const loop = health.loop || {};
  return [
    el("h2", {}, "Cluster"),
    el("div", { class: "cards" },
      card("cluster id", cluster.clusterId || "–"),
      card("brokers", fmt(cluster.brokers.length)),
      card("topics", fmt(streams.streams.length)),
      card("tables", fmt(tables.tables.length)),
      card("this broker", health.status),
      card("event-loop lag (ms)", fmt(loop.lag_ms))),
    el("h3", {}, "Brokers"),
    table(["node id", "host", "port", "rack"],
      cluster.brokers.map((b) => [String(b.nodeId), b.host, String(b.port), b.rack || "–"]), [0, 2]),
  ];
}

async function viewTopics() {
  const list = (await getJson(API + "/streams?limit=1000")).streams;
  const details = await Promise.all(list.map((s) => getJson(API + "/streams/" + seg(s.name))));
  const rows = details.map((d) => {
    const total = d.partitionOffsets.reduce((a, p) => a + Math.max(0, p.latestOffset - p.earliestOffset), 0);
    const end = d.partitionOffsets.reduce((a, p) => a + Math.max(0, p.latestOffset), 0);
    sample("topic:" + d.name, end);
    const r = rates("topic:" + d.name);
    return [link("topic/" + seg(d.name), d.name), fmt(d.partitions), fmt(total),
      r.length ? fmt(r[r.length - 1].v) : "–", d.table && d.table.enabled ? d.table.namespace + "." + d.table.name : "–"];
  });
  return [el("h2", {}, "Topics"),
    table(["topic", "partitions", "records", "records/s", "table"], rows, [1, 2, 3])];
}

async function viewTopic(name) {
  const d = await getJson(API + "/streams/" + seg(name));
  let total = 0, end = 0;
  for (const p of d.partitionOffsets) {
    total += Math.max(0, p.latestOffset - p.earliestOffset);
    end += Math.max(0, p.latestOffset);
    sample("part:" + name + ":" + p.partition, p.latestOffset);
  }
  sample("topic:" + name, end);
  const configs = Object.entries(d.configs || {});
  return [
    el("h2", {}, "Topic ", el("span", { id: "topic-name" }, d.name)),
    el("div", { class: "cards" },
      card("partitions", fmt(d.partitions)), card("records", fmt(total)),
      card("layout", d.layout ? d.layout.type : "–"),
      card("table", d.table && d.table.enabled ? d.table.namespace + "." + d.table.name : "not materialized")),
    el("div", { class: "plots" },
      plot("produce throughput", rates("topic:" + name), "records/s"),
      plot("log end offset, all partitions", series.get("topic:" + name) || [], "records")),
    el("h3", {}, "Partitions"),
    table(["partition", "earliest offset", "latest offset", "records", "records/s", ""],
      d.partitionOffsets.map((p) => {
        const r = rates("part:" + name + ":" + p.partition);
        return [String(p.partition), fmt(p.earliestOffset), fmt(p.latestOffset),
          fmt(Math.max(0, p.latestOffset - p.earliestOffset)), r.length ? fmt(r[r.length - 1].v) : "–",
          link("records/" + seg(name) + "/" + p.partition, "browse records")];
      }), [0, 1, 2, 3, 4]),
    el("h3", {}, "Configs"),
    configs.length ? table(["key", "value"], configs) : el("p", { class: "muted" }, "defaults only"),
  ];
}

// A record's key or value as the chosen decoding.
function payload(p, mode) {
  if (p === null || p === undefined) return el("span", { class: "muted" }, "null");
  let text;
  if (mode === "hex") {
    const bytes = p.base64 !== undefined ? atob(p.base64) : new TextEncoder().encode(p.text || "").reduce((s, b) => s + String.fromCharCode(b), "");
    text = Array.from(bytes, (c) => c.charCodeAt(0).toString(16).padStart(2, "0")).join(" ");
  } else if (mode === "json" && p.json !== undefined) {
    text = JSON.stringify(p.json, null, 2);
  } else {
    text = p.text !== undefined ? p.text : "base64:" + p.base64;
  }
  return el("pre", { class: "payload" }, text, p.truncated ? " … (" + fmt(p.size) + " bytes)" : "");
}

const browse = { limit: 20, mode: "text" };

async function viewRecords(name, partition) {
  const r = await getJson(API + "/streams/" + seg(name) + "/partitions/" + seg(partition) + "/records?limit=" + browse.limit);
  const modeSel = el("select", { id: "decode", onchange: (e) => { browse.mode = e.target.value; render(); } },
    ["text", "json", "hex"].map((m) => {
      const o = el("option", { value: m }, m);
      if (m === browse.mode) o.selected = true;
      return o;
    }));
  const limit = el("input", { type: "number", id: "limit", min: 1, max: 500, value: browse.limit,
    onchange: (e) => { browse.limit = Math.min(500, Math.max(1, Number(e.target.value) || 20)); render(); } });
  return [
    el("h2", {}, "Records of ", link("topic/" + seg(name), name), " partition " + partition),
    el("p", {}, el("label", {}, "latest ", limit, " records"), el("label", {}, "decoded as ", modeSel),
      el("span", { class: "muted" }, "offsets " + fmt(r.earliestOffset) + " – " + fmt(r.latestOffset))),
    table(["offset", "timestamp", "key", "value", "headers"],
      r.records.map((x) => [String(x.offset), new Date(x.timestamp).toISOString(),
        payload(x.key, browse.mode), payload(x.value, browse.mode),
        (x.headers || []).map((h) => h.key + "=" + (h.value && h.value.text !== undefined ? h.value.text : "…")).join(", ")]), [0]),
  ];
}

async function viewGroups() {
  const groups = (await getJson(API + "/groups")).groups;
  const out = [el("h2", {}, "Consumer groups")];
  if (!groups.length) out.push(el("p", { class: "muted" }, "no consumer groups"));
  for (const g of groups) {
    sample("group:" + g.groupId, g.lag);
    out.push(el("h3", {}, el("span", { class: "group-id" }, g.groupId), " — " + (g.state || "–") + ", total lag ",
      el("span", { class: "group-lag" }, fmt(g.lag))));
    out.push(el("div", { class: "plots" }, plot("lag of " + g.groupId, series.get("group:" + g.groupId) || [], "records")));
    out.push(table(["topic", "partition", "committed offset", "log end offset", "lag"],
      g.offsets.map((o) => [o.topic, String(o.partition), fmt(o.committedOffset), fmt(o.logEndOffset),
        o.lag < 0 ? "–" : fmt(o.lag)]), [1, 2, 3, 4]));
  }
  return out;
}

async function tableState(t) {
  const full = await getJson(API + "/tables/" + seg(t.namespace) + "/" + seg(t.name));
  let lagRecords = null;
  if (full.stream && full.committedOffsets) {
    try {
      const s = await getJson(API + "/streams/" + seg(full.stream));
      const done = new Map(full.committedOffsets.map((o) => [o.partition, o.committedOffset]));
      lagRecords = s.partitionOffsets.reduce((a, p) => a + Math.max(0, p.latestOffset - (done.get(p.partition) || 0)), 0);
    } catch (_) { /* the stream is gone: no record lag */ }
  }
  const key = "table:" + t.namespace + "." + t.name;
  sample(key + ":lagMs", full.lagMs);
  sample(key + ":lagRecords", lagRecords);
  sample(key + ":freshness", full.lastCommitMs > 0 ? (Date.now() - full.lastCommitMs) / 1000 : null);
  return { full, lagRecords, key };
}

async function viewTables() {
  const list = (await getJson(API + "/tables?limit=1000")).tables;
  const states = await Promise.all(list.map(tableState));
  return [el("h2", {}, "Tables"),
    list.length ? table(["table", "stream", "rows", "snapshots", "data files", "bytes", "last commit", "lag (records)", "lag (ms)"],
      states.map(({ full, lagRecords }) => [link("table/" + seg(full.namespace) + "/" + seg(full.name), full.namespace + "." + full.name),
        full.stream || "–", fmt(full.rows), fmt(full.snapshots), fmt(full.dataFiles), fmt(full.bytes),
        ago(full.lastCommitMs), fmt(lagRecords), fmt(full.lagMs)]), [2, 3, 4, 5, 7, 8])
      : el("p", { class: "muted" }, "no tables: enable a stream's table policy (lakestream.table.enabled=true)")];
}

async function viewTable(ns, name) {
  const { full, lagRecords, key } = await tableState({ namespace: ns, name });
  let policy = [];
  if (full.stream) {
    try {
      policy = (await getJson(API + "/streams/" + seg(full.stream) + "/policy")).fields || [];
    } catch (_) { /* no stream: no policy */ }
  }
  return [
    el("h2", {}, "Table ", el("span", { id: "table-name" }, full.namespace + "." + full.name)),
    el("div", { class: "cards" },
      card("rows", el("span", { id: "table-rows" }, fmt(full.rows))), card("snapshots", fmt(full.snapshots)),
      card("data files", fmt(full.dataFiles)), card("bytes", fmt(full.bytes)),
      card("last commit", ago(full.lastCommitMs)), card("lag (records)", fmt(lagRecords)),
      card("lag (ms)", fmt(full.lagMs))),
    full.heldReason ? el("p", { class: "error" }, "held: " + full.heldReason) : null,
    el("div", { class: "plots" },
      plot("lag", series.get(key + ":lagRecords") || [], "records"),
      plot("lag", series.get(key + ":lagMs") || [], "ms"),
      plot("freshness: time since last commit", series.get(key + ":freshness") || [], "s")),
    el("h3", {}, "Committed offsets"),
    table(["partition", "committed offset"], (full.committedOffsets || []).map((o) => [String(o.partition), fmt(o.committedOffset)]), [0, 1]),
    el("h3", {}, "Policy"),
    table(["key", "value", "source"], policy.map((f) => [f.key, f.value === null || f.value === undefined ? "–" : String(f.value), f.source || ""])),
    el("p", { class: "muted" }, "metadata: " + full.metadataLocation + ", format v" + full.formatVersion),
  ];
}

// Object-store request counts from /metrics: the call counts of
// lakestream_object_store_operation_duration_seconds (its _count series, one
// per operation label), split as S3 prices requests: PUT, COPY, POST
// (delete_many) and LIST are PUT-class, GET and HEAD GET-class; DELETE is
// free and "map" (the file store's local reads) is no request.
const PUT_CLASS = new Set(["put", "copy", "list", "delete_many"]);
const GET_CLASS = new Set(["get", "head"]);

function objstoreCounts(m) {
  const samples = m["lakestream_object_store_operation_duration_seconds_count"];
  if (!samples) return null;
  let put = 0, get = 0;
  for (const s of samples) {
    const op = s.labels.operation || "";
    if (PUT_CLASS.has(op)) put += s.value;
    else if (GET_CLASS.has(op)) get += s.value;
  }
  return { put, get };
}

function price(kind) {
  const v = Number(localStorage.getItem("lakestream.console.price." + kind));
  return Number.isFinite(v) && v >= 0 && localStorage.getItem("lakestream.console.price." + kind) !== null ? v : PRICE_DEFAULTS[kind];
}

async function viewObjectStore() {
  const m = await getMetrics();
  const counts = m && objstoreCounts(m);
  if (counts) { sample("os:put", counts.put); sample("os:get", counts.get); }
  const last = (k) => { const r = rates(k); return r.length ? r[r.length - 1].v : null; };
  const putRate = last("os:put"), getRate = last("os:get");
  const month = 30 * 86400 / 1000;
  const cost = putRate === null ? null : putRate * month * price("put") + getRate * month * price("get");
  const field = (kind, label) => el("label", {}, label + " ",
    el("input", { type: "number", step: "0.0001", min: 0, id: "price-" + kind, value: price(kind),
      oninput: (e) => localStorage.setItem("lakestream.console.price." + kind, e.target.value),
      onchange: () => render() }));
  return [
    el("h2", {}, "Object store"),
    counts ? null : el("p", { class: "muted" }, "this broker's /metrics has no object-store request counters yet; rates appear once it does"),
    el("div", { class: "cards" },
      card("PUT-class requests/s", fmt(putRate)), card("GET-class requests/s", fmt(getRate)),
      card("estimated monthly request cost (USD, this broker)", el("span", { id: "monthly-cost" }, cost === null ? "–" : "$" + cost.toFixed(2)))),
    el("p", {}, field("put", "USD per 1,000 PUT/COPY/POST/LIST"), field("get", "USD per 1,000 GET/HEAD"),
      el("span", { class: "muted" }, "(defaults: AWS S3 Standard; kept in this browser)")),
    el("div", { class: "plots" },
      plot("PUT-class request rate", rates("os:put"), "requests/s"),
      plot("GET-class request rate", rates("os:get"), "requests/s")),
  ];
}

// ------------------------------------------------------------------- router

const routes = [
  [/^cluster$/, viewCluster],
  [/^topics$/, viewTopics],
  [/^topic\/([^/]+)$/, viewTopic],
  [/^records\/([^/]+)\/(\d+)$/, viewRecords],
  [/^groups$/, viewGroups],
  [/^tables$/, viewTables],
  [/^table\/([^/]+)\/([^/]+)$/, viewTable],
  [/^objectstore$/, viewObjectStore],
];

let rendering = false;

async function render() {
  if (rendering) return;
  rendering = true;
  const hash = location.hash.replace(/^#/, "") || "cluster";
  for (const a of document.querySelectorAll("nav a"))
    a.classList.toggle("active", hash.split("/")[0].startsWith(a.getAttribute("href").slice(1).replace(/s$/, "")));
  const main = document.getElementById("main");
  const status = document.getElementById("status");
  try {
    const route = routes.find(([re]) => re.test(hash));
    let nodes;
    if (!route) nodes = [el("p", { class: "error" }, "no page " + hash)];
    else nodes = await route[1](...route[0].exec(hash).slice(1).map(decodeURIComponent));
    main.replaceChildren(...nodes.filter((n) => n));
    main.setAttribute("data-view", hash);
    main.setAttribute("data-samples", String((Number(main.getAttribute("data-samples")) || 0) + 1));
    status.textContent = "updated " + new Date().toLocaleTimeString();
  } catch (e) {
    status.textContent = "";
    main.replaceChildren(el("p", { class: "error" }, String(e.message || e)));
  } finally {
    rendering = false;
  }
}

window.addEventListener("hashchange", () => {
  document.getElementById("main").setAttribute("data-samples", "0");
  render();
});
// A field being edited is not rebuilt under the user's cursor: that sample is skipped.
setInterval(() => {
  const a = document.activeElement;
  if (!(a && a.tagName === "INPUT" && document.getElementById("main").contains(a))) render();
}, SAMPLE_MS);
render();
