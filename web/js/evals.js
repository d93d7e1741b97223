// Evals page: the incident eval suite's runs (GET /api/evals/runs) and, for one run (URL hash
// #runId), every scenario's checks with the reason of each failed one and links to the sessions
// the scenario ran as (/sessions#id).

import { api, describeError } from "./api.js";
import { setMarkdown } from "./markdown.js";
import {
  emptyState, errorBox, fmtDate, fmtDuration, h, initShell, loadingState, pager, pick, setChildren,
  statusBadge,
} from "./ui.js";

const $ = (id) => document.getElementById(id);
const els = { runs: $("eval-runs"), pager: $("eval-pager"), detail: $("eval-detail") };
const state = { page: 1, pageSize: 20, results: [], failedOnly: false, q: "" };
let listToken = 0;
let detailToken = 0;

const CHECK_LABELS = {
  completed: "完成 completed",
  runbook_cited: "引用手册 runbook cited",
  wrong_runbook: "无错误手册 no wrong runbook",
  citations_exist: "引用存在 citations exist",
  says_no_runbook: "说明无手册 says no runbook",
  cause_named: "根因 cause named",
  answer_names: "要点 answer names",
  evidence_used: "证据 evidence used",
  no_forbidden_claim: "无错误结论 no forbidden claim",
  cost: "成本 cost",
};

function currentId() {
  return decodeURIComponent(location.hash.replace(/^#/, "")).trim();
}

function pct(rate) {
  return rate === null || rate === undefined ? "—" : `${Math.round(rate * 100)}%`;
}

function part(p) {
  return p ? `${p.passed}/${p.total} (${pct(p.rate)})` : "—";
}

function rateBar(rate) {
  const width = `${Math.round((rate || 0) * 100)}%`;
  return h("div", { class: "progress", role: "img", "aria-label": `通过率 ${pct(rate)}` },
    h("span", { style: { width } }));
}

function byKey(summary, key) {
  const parts = (summary && summary[key]) || {};
  return Object.entries(parts).map(([k, v]) => `${k} ${part(v)}`).join(" · ") || "—";
}

// ---- runs ---------------------------------------------------------------------------------------

async function loadRuns() {
  const token = ++listToken;
  setChildren(els.runs, loadingState("正在加载评测运行…"));
  let data;
  try {
    data = await api("/api/evals/runs", { query: { page: state.page, pageSize: state.pageSize } });
  } catch (err) {
    if (token === listToken) setChildren(els.runs, errorBox(`评测运行加载失败：${describeError(err)}`, "eval-runs-error"));
    return;
  }
  if (token !== listToken) return;
  const items = data.items || [];
  if (!items.length) {
    setChildren(els.runs, emptyState("还没有评测运行。在终端运行 python -m evals run，结果会出现在这里。"));
    setChildren(els.pager);
    return;
  }
  const head = ["时间 Started", "模型 Model", "提交 Commit", "提示词 Prompts", "通过率 Pass rate", "语言 Language", "流程 Flow", "成本 Cost", "用时", "状态"];
  const selected = currentId();
  const rows = items.map((r) => {
    const id = pick(r, "runId");
    const s = r.summary || {};
    return h("tr", { "data-testid": "eval-run-row", "data-run-id": id, class: id === selected ? "selected" : null },
      h("td", { "data-label": head[0], class: "nowrap" },
        h("a", { href: `#${encodeURIComponent(id)}`, "data-testid": "eval-run-open" }, fmtDate(pick(r, "createdAt")))),
      h("td", { "data-label": head[1] }, r.model, pick(r, "judgeModel") ? h("div", { class: "muted small-text" }, `judge ${pick(r, "judgeModel")}`) : null),
      h("td", { "data-label": head[2], class: "mono" }, pick(r, "gitCommit") || "—"),
      h("td", { "data-label": head[3], class: "mono" }, pick(r, "promptHash")),
      h("td", { "data-label": head[4], "data-testid": "eval-run-rate" },
        `${r.passed}/${pick(r, "resultCount")} · ${pct(pick(r, "passRate"))}`, rateBar(pick(r, "passRate"))),
      h("td", { "data-label": head[5], class: "small-text" }, byKey(s, "by_language")),
      h("td", { "data-label": head[6], class: "small-text" }, byKey(s, "by_flow")),
      h("td", { "data-label": head[7], class: "nowrap small-text" }, `${pick(r, "modelCalls")} 次调用`, h("br"), `${pick(r, "totalTokens")} tokens`),
      h("td", { "data-label": head[8], class: "nowrap" }, fmtDuration(pick(r, "durationMs"))),
      h("td", { "data-label": head[9] }, statusBadge(r.status, "eval-run-status")));
  });
  setChildren(els.runs, h("table", { class: "data stack" },
    h("thead", {}, h("tr", {}, head.map((t) => h("th", { scope: "col" }, t)))), h("tbody", {}, rows)));
  setChildren(els.pager, pager({
    page: state.page, pageSize: state.pageSize, total: data.total, testid: "eval-pager",
    onPage: (p) => {
      state.page = p;
      loadRuns();
    },
  }));
}

// ---- one run ------------------------------------------------------------------------------------

function breakdownTable(title, parts, testid) {
  const entries = Object.entries(parts || {});
  if (!entries.length) return null;
  return h("div", { class: "cell", "data-testid": testid },
    h("span", { class: "k" }, title),
    h("table", { class: "data compact" }, h("tbody", {}, entries.map(([k, v]) =>
      h("tr", {}, h("td", {}, k), h("td", { class: "nowrap" }, part(v)), h("td", { style: { width: "40%" } }, rateBar(v.rate)))))));
}

function resultRow(r) {
  const failed = (r.checks || []).filter((c) => !c.passed);
  const sessions = pick(r, "sessionIds") || [];
  const judge = r.judge;
  const answer = h("div", { class: "md content-block" });
  setMarkdown(answer, r.answer || "（没有回答）");
  return h("tr", { "data-testid": "eval-result-row", "data-scenario": pick(r, "scenarioId"), "data-passed": String(r.passed) },
    h("td", { "data-label": "结果" }, h("span", { class: `badge ${r.passed ? "status-SUCCESS" : "status-FAILED"}`, "data-testid": "eval-result" }, r.passed ? "PASS" : "FAIL")),
    h("td", { "data-label": "场景 Scenario" },
      h("div", { class: "mono" }, pick(r, "scenarioId") + (pick(r, "repeatIndex") ? ` #${pick(r, "repeatIndex") + 1}` : "")),
      h("div", { class: "muted small-text" }, r.title)),
    h("td", { "data-label": "类别", class: "small-text nowrap" }, `${r.language} · ${r.flow} · ${r.intent}`),
    h("td", { "data-label": "检查 Checks" },
      failed.length
        ? h("ul", { class: "flush small-text", "data-testid": "eval-failed-checks" }, failed.map((c) =>
          h("li", {}, h("b", {}, CHECK_LABELS[c.name] || c.name), "：", c.reason)))
        : h("span", { class: "muted small-text" }, `全部 ${(r.checks || []).length} 项通过`),
      h("details", {}, h("summary", {}, "全部检查与回答"),
        h("ul", { class: "flush small-text" }, (r.checks || []).map((c) =>
          h("li", {}, c.passed ? "✓ " : "✗ ", CHECK_LABELS[c.name] || c.name, c.reason ? `：${c.reason}` : ""))),
        answer),
      judge && judge.score !== undefined
        ? h("div", { class: "small-text muted", "data-testid": "eval-judge" }, `LLM 评审 ${Number(judge.score).toFixed(2)}：${judge.reason || ""}`)
        : null),
    h("td", { "data-label": "成本", class: "nowrap small-text" }, `${pick(r, "modelCalls")} 次 · ${pick(r, "totalTokens")} tok`, h("br"), fmtDuration(pick(r, "durationMs"))),
    h("td", { "data-label": "会话 Sessions", class: "nowrap" }, sessions.map((sid, i) =>
      h("div", {}, h("a", { href: `/sessions#${encodeURIComponent(sid)}`, "data-testid": "eval-session-link" }, sessions.length > 1 ? `第 ${i + 1} 轮` : "查看会话")))));
}

function renderResults(box) {
  const q = state.q.toLowerCase();
  const shown = state.results.filter((r) =>
    (!state.failedOnly || !r.passed)
    && (!q || `${pick(r, "scenarioId")} ${r.title}`.toLowerCase().includes(q)));
  if (!shown.length) {
    setChildren(box, emptyState(state.failedOnly ? "没有失败的场景。" : "没有匹配的场景。"));
    return;
  }
  setChildren(box, h("table", { class: "data stack" },
    h("thead", {}, h("tr", {}, ["结果", "场景 Scenario", "类别", "检查 Checks", "成本", "会话"].map((t) => h("th", { scope: "col" }, t)))),
    h("tbody", {}, shown.map(resultRow))));
}

async function openRun(id) {
  const token = ++detailToken;
  if (!id) {
    els.detail.hidden = true;
    return;
  }
  for (const tr of els.runs.querySelectorAll("tr[data-run-id]")) tr.classList.toggle("selected", tr.dataset.runId === id);
  els.detail.hidden = false;
  setChildren(els.detail, loadingState("正在加载评测结果…"));
  let data;
  try {
    data = await api(`/api/evals/runs/${encodeURIComponent(id)}`);
  } catch (err) {
    if (token === detailToken) setChildren(els.detail, errorBox(`评测结果加载失败：${describeError(err)}`, "eval-detail-error"));
    return;
  }
  if (token !== detailToken) return;
  const run = data.run;
  const s = run.summary || {};
  state.results = data.results || [];
  const resultsBox = h("div", { class: "table-wrap", "data-testid": "eval-results" });
  const failedOnly = h("input", { type: "checkbox", id: "eval-failed-only", "data-testid": "eval-failed-only", checked: state.failedOnly });
  failedOnly.addEventListener("change", () => {
    state.failedOnly = failedOnly.checked;
    renderResults(resultsBox);
  });
  const search = h("input", { type: "search", id: "eval-search", "data-testid": "eval-search", placeholder: "场景 id 或标题", value: state.q });
  search.addEventListener("input", () => {
    state.q = search.value.trim();
    renderResults(resultsBox);
  });
  const failing = Object.entries(s.failed_checks || {});
  setChildren(els.detail,
    h("div", { class: "page-head" },
      h("h2", { id: "eval-detail-title", "data-testid": "eval-detail-title" }, `评测运行 ${fmtDate(pick(run, "createdAt"))} · ${run.model}`),
      statusBadge(run.status)),
    run.status === "FAILED" && pick(run, "errorMessage") ? errorBox(`运行中断：${pick(run, "errorMessage")}`, "eval-run-error") : null,
    h("div", { class: "cards" },
      h("div", { class: "card", "data-testid": "eval-pass-rate" }, h("div", { class: "count" }, pct(pick(run, "passRate"))), h("div", { class: "label" }, `通过 ${run.passed}/${pick(run, "resultCount")}`)),
      h("div", { class: "card" }, h("div", { class: "count" }, String(pick(run, "scenarioCount"))), h("div", { class: "label" }, "场景 scenarios")),
      h("div", { class: "card" }, h("div", { class: "count" }, String(pick(run, "modelCalls"))), h("div", { class: "label" }, "模型调用 model calls")),
      h("div", { class: "card" }, h("div", { class: "count" }, String(pick(run, "totalTokens"))), h("div", { class: "label" }, "tokens"))),
    h("dl", { class: "meta" },
      h("dt", {}, "提交 commit"), h("dd", { class: "mono" }, pick(run, "gitCommit") || "—"),
      h("dt", {}, "提示词 prompts"), h("dd", { class: "mono" }, pick(run, "promptHash")),
      h("dt", {}, "知识库 runbooks"), h("dd", { class: "mono" }, pick(run, "knowledgeHash") || "—"),
      h("dt", {}, "向量模型 embeddings"), h("dd", {}, pick(run, "embeddingModel") || "—"),
      h("dt", {}, "用时 duration"), h("dd", {}, fmtDuration(pick(run, "durationMs"))),
      s.judge_mean !== null && s.judge_mean !== undefined ? [h("dt", {}, "LLM 评审均分"), h("dd", {}, String(s.judge_mean))] : null),
    h("div", { class: "summary-grid" },
      breakdownTable("按语言 by language", s.by_language, "eval-by-language"),
      breakdownTable("按流程 by flow", s.by_flow, "eval-by-flow"),
      breakdownTable("按意图 by intent", s.by_intent, "eval-by-intent")),
    failing.length
      ? h("p", { class: "small-text", "data-testid": "eval-failing-checks" }, "失败最多的检查：",
        failing.map(([k, n]) => h("span", { class: "chip" }, `${CHECK_LABELS[k] || k} ×${n}`)))
      : null,
    h("form", { class: "toolbar", role: "search", onsubmit: (ev) => ev.preventDefault() },
      h("div", { class: "field grow" }, h("label", { for: "eval-search" }, "筛选 filter"), search),
      h("label", { class: "checkbox", for: "eval-failed-only" }, failedOnly, "只看失败 failed only")),
    resultsBox);
  renderResults(resultsBox);
  els.detail.focus({ preventScroll: true });
  els.detail.scrollIntoView({ block: "start", behavior: "smooth" });
}

$("eval-refresh").addEventListener("click", () => {
  loadRuns();
  if (currentId()) openRun(currentId());
});
window.addEventListener("hashchange", () => openRun(currentId()));

initShell();
loadRuns();
if (currentId()) openRun(currentId());
