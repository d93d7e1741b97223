// Insights page: GET /api/insights drawn as charts with the vendored Chart.js (web/vendor/,
// loaded as a classic script before this module: window.Chart). A chart with nothing to show
// says so in words instead of drawing empty axes.

import { api, describeError } from "./api.js";
import { emptyState, errorBox, fmtDate, h, initShell, loadingState, pick, setChildren } from "./ui.js";

const $ = (id) => document.getElementById(id);
const els = { body: $("insight-body"), range: $("insight-range"), span: $("insight-span") };
const charts = [];
let token = 0;

const LEVEL_COLORS = { PRECISE: "#16a34a", HIGHLY_RELEVANT: "#2563eb", REFERENCE: "#d97706", NONE: "#9ca3af" };
const LEVEL_LABELS = { PRECISE: "PRECISE 精准", HIGHLY_RELEVANT: "HIGHLY_RELEVANT 高度相关", REFERENCE: "REFERENCE 参考", NONE: "NONE 未命中" };
const DEDUP_LABELS = {
  doc_retrieved: "doc_retrieved 文档已返回",
  domain_retrieved: "domain_retrieved 领域已检索",
  budget_exhausted: "budget_exhausted 次数用尽",
};
const BLUE = "#2563eb";
const ORANGE = "#f59e0b";
const FONT = getComputedStyle(document.documentElement).fontFamily;

function pct(v) {
  return v === null || v === undefined ? "—" : `${(v * 100).toFixed(1)}%`;
}

function binLabel(b, digits) {
  return `${Number(b.lo).toFixed(digits)}–${Number(b.hi).toFixed(digits)}`;
}

// ---- one chart ----------------------------------------------------------------------------------

function chartPanel(id, title, hint, config, hasData) {
  const body = hasData
    ? h("div", { class: "chart-box" }, h("canvas", { "data-testid": `chart-${id}-canvas`, role: "img", "aria-label": title }))
    : h("p", { class: "muted chart-empty", "data-testid": `chart-${id}-empty` }, "此时间范围内没有数据。");
  const panel = h("section", { class: "panel chart-panel", "data-testid": `chart-${id}`, "aria-label": title },
    h("h2", {}, title), hint ? h("p", { class: "muted small-text" }, hint) : null, body);
  return { panel, draw: () => hasData && charts.push(new window.Chart(body.querySelector("canvas"), config)) };
}

function bar(labels, datasets, { horizontal = false, stacked = false } = {}) {
  return {
    type: "bar",
    data: { labels, datasets },
    options: {
      indexAxis: horizontal ? "y" : "x",
      animation: false,
      maintainAspectRatio: false,
      plugins: { legend: { display: datasets.length > 1 } },
      scales: { x: { stacked, ticks: { precision: 0 } }, y: { stacked, beginAtZero: true, ticks: { precision: 0 } } },
    },
  };
}

function countsChart(items, labels, colors) {
  return bar(
    items.map((c) => labels[c.key] || c.key || "（无）"),
    [{ label: "次数", data: items.map((c) => c.count), backgroundColor: items.map((c) => colors[c.key] || "#64748b") }],
    { horizontal: true },
  );
}

// ---- the page -----------------------------------------------------------------------------------

function kpi(label, value, testid) {
  return h("div", { class: "card" }, h("span", { class: "count", "data-testid": testid }, value), h("span", { class: "label" }, label));
}

function kpis(d) {
  const fb = d.feedback;
  return h("div", { class: "cards", "data-testid": "insight-kpis" },
    kpi("会话 sessions", String(fb.sessions), "kpi-sessions"),
    kpi("知识库检索 lookups", String(d.lookups), "kpi-lookups"),
    kpi("反馈率 feedback rate", pct(pick(fb, "feedbackRate")), "kpi-feedback-rate"),
    kpi("有用率 useful rate", pct(pick(fb, "usefulRate")), "kpi-useful-rate"),
    kpi("案例 cases", String(fb.cases), "kpi-cases"),
    kpi("平均证据评分 evidence", d.evidenceMean ?? "—", "kpi-evidence"),
    kpi("成功 / 失败 sessions", `${d.sessionsByStatus.SUCCESS} / ${d.sessionsByStatus.FAILED}`, "kpi-outcomes"),
    kpi("有用 / 没用 feedback", `${fb.useful} / ${pick(fb, "notUseful")}`, "kpi-feedback"),
  );
}

// Past 400 weeks a bucket holds several weeks (bucketSeconds says how many).
function bucketName(d) {
  const weeks = Math.round((pick(d, "bucketSeconds") || 0) / 604800);
  if (d.bucket === "week" && weeks > 1) return `${weeks}周`;
  return { hour: "小时", day: "天", week: "周" }[d.bucket] || d.bucket;
}

function panels(d) {
  const sum = (xs) => xs.reduce((a, x) => a + x.count, 0);
  const timeline = d.timeline || [];
  const unit = bucketName(d);
  const latency = pick(d, "toolLatency") || [];
  return [
    chartPanel("timeline", "会话与检索趋势 Sessions & lookups over time", `每${unit}的会话数与 lookup_knowledge 调用数`,
      bar(timeline.map((t) => fmtDate(t.start).slice(d.bucket === "hour" ? 5 : 0, d.bucket === "hour" ? 16 : 10)), [
        { label: "会话 sessions", data: timeline.map((t) => t.sessions), backgroundColor: BLUE },
        { label: "检索 lookups", data: timeline.map((t) => t.lookups), backgroundColor: ORANGE },
      ]),
      timeline.some((t) => t.sessions || t.lookups)),
    chartPanel("relevance", "查询质量分布 Relevance levels", "每次检索被判定的相关等级",
      countsChart(pick(d, "relevanceLevels"), LEVEL_LABELS, LEVEL_COLORS), sum(pick(d, "relevanceLevels")) > 0),
    chartPanel("dedup", "去重原因分布 Dedup reasons", "（无）= 未去重的检索",
      countsChart(pick(d, "dedupReasons"), DEDUP_LABELS, { doc_retrieved: BLUE, domain_retrieved: ORANGE, budget_exhausted: "#dc2626" }),
      sum(pick(d, "dedupReasons")) > 0),
    chartPanel("similarity", "归一化分数分布 Similarity", "最佳命中的稠密相似度 1 − d/max_l2，以及判定器的置信度",
      bar(d.similarity.map((b) => binLabel(b, 1)), [
        { label: "dense similarity", data: d.similarity.map((b) => b.count), backgroundColor: BLUE },
        { label: "judge confidence", data: d.confidence.map((b) => b.count), backgroundColor: ORANGE },
      ]),
      sum(d.similarity) + sum(d.confidence) > 0),
    chartPanel("evidence", "证据评分分布 Evidence scores", "每个会话的证据评分（0–100，规则引擎）",
      bar(pick(d, "evidenceScores").map((b) => binLabel(b, 0)), [
        { label: "会话", data: pick(d, "evidenceScores").map((b) => b.count), backgroundColor: "#16a34a" },
      ]),
      sum(pick(d, "evidenceScores")) > 0),
    chartPanel("latency", "工具延迟 Tool latency", "每个工具的 p50 / p95（毫秒）",
      bar(latency.map((t) => `${t.tool} (${t.calls})`), [
        { label: "p50 ms", data: latency.map((t) => pick(t, "p50Ms")), backgroundColor: BLUE },
        { label: "p95 ms", data: latency.map((t) => pick(t, "p95Ms")), backgroundColor: ORANGE },
      ], { horizontal: true }),
      latency.some((t) => pick(t, "p50Ms") !== null)),
  ];
}

function windowQuery() {
  const hours = Number(els.range.value);
  return hours ? { since: new Date(Date.now() - hours * 3600_000).toISOString() } : {};
}

async function load() {
  const mine = ++token;
  setChildren(els.body, loadingState("正在统计…"));
  let d;
  try {
    d = await api("/api/insights", { query: windowQuery() });
  } catch (err) {
    if (mine === token) setChildren(els.body, errorBox(`洞察加载失败：${describeError(err)}`, "insight-error"));
    return;
  }
  if (mine !== token) return;
  if (!window.Chart) {
    setChildren(els.body, errorBox("图表库 /static/vendor/chart.umd.min.js 没有加载：请检查 web/vendor/（见 web/vendor/README.md）。", "insight-error"));
    return;
  }
  while (charts.length) charts.pop().destroy();
  els.span.textContent = `${d.since ? fmtDate(d.since) : "最早记录"} → ${fmtDate(d.until)} · 按${bucketName(d)}统计`;
  if (d.empty) {
    setChildren(els.body, emptyState("这个时间范围内还没有会话和工具调用：到「对话」页提问或运行 AI-Ops 告警分析后，这里会显示统计图表。",
      h("a", { class: "button primary", href: "/" }, "去提问")));
    return;
  }
  const list = panels(d);
  setChildren(els.body, kpis(d), h("div", { class: "chart-grid" }, list.map((p) => p.panel)));
  list.forEach((p) => p.draw());
  els.body.dataset.drawn = String(charts.length);
}

if (window.Chart) {
  window.Chart.defaults.font.family = FONT;
  window.Chart.defaults.color = "#334155";
}
els.range.addEventListener("change", load);
$("insight-window").addEventListener("submit", (ev) => ev.preventDefault());
$("insight-refresh").addEventListener("click", load);

initShell();
load();
