// Case library page: sessions operators marked useful, searchable by text; a case opens from the
// list or from the URL hash (#caseId) with its problem, solution and the session it came from.

import { api, describeError } from "./api.js";
import { openScenarioExport } from "./case_scenario.js";
import { setMarkdown } from "./markdown.js";
import {
  clear, confirmDialog, debounce, emptyState, errorBox, fmtDate, h, initShell, loadingState, okBox,
  pager, pick, setChildren, statusBadge,
} from "./ui.js";

const $ = (id) => document.getElementById(id);
const els = {
  table: $("case-table"),
  pager: $("case-pager"),
  search: $("case-search"),
  pageSize: $("case-page-size"),
  detail: $("case-detail"),
};
const state = { q: "", page: 1, pageSize: 20, items: [] };
let listToken = 0;
let detailToken = 0;

function currentId() {
  return decodeURIComponent(location.hash.replace(/^#/, "")).trim();
}

// ---- list ---------------------------------------------------------------------------------------

async function loadCases() {
  const token = ++listToken;
  if (!state.items.length) setChildren(els.table, loadingState("正在加载案例…"));
  let data;
  try {
    data = await api("/api/cases", { query: { q: state.q, page: state.page, pageSize: state.pageSize } });
  } catch (err) {
    if (token === listToken) setChildren(els.table, errorBox(`案例列表加载失败：${describeError(err)}`, "case-table-error"));
    return;
  }
  if (token !== listToken) return;
  state.items = data.items || [];
  renderTable(data.total ?? state.items.length);
}

function renderTable(total) {
  if (!state.items.length) {
    setChildren(
      els.table,
      state.q
        ? emptyState(`没有包含「${state.q}」的案例，请换个关键词。`)
        : emptyState("案例库还是空的：在「对话」页对一个回答点「有用」，它就会归档为案例。",
          h("a", { class: "button primary", href: "/" }, "去提问")),
    );
    clear(els.pager);
    return;
  }
  const head = ["标题 Title", "摘要 Excerpt", "分类", "来源", "创建时间"];
  const selected = currentId();
  const rows = state.items.map((c) => {
    const id = pick(c, "caseId");
    return h(
      "tr",
      { "data-testid": "case-row", "data-case-id": id, class: id === selected ? "selected" : null },
      h("td", { "data-label": head[0] }, h("a", { href: `#${encodeURIComponent(id)}`, "data-testid": "case-open" }, c.title || id)),
      h("td", { "data-label": head[1], class: "muted small-text" }, clip(c.excerpt, 120)),
      h("td", { "data-label": head[2] }, h("span", { class: "badge neutral" }, c.category)),
      h("td", { "data-label": head[3] }, c.source),
      h("td", { "data-label": head[4], class: "nowrap" }, fmtDate(pick(c, "createdAt"))),
    );
  });
  setChildren(
    els.table,
    h("table", { class: "data stack" },
      h("thead", {}, h("tr", {}, head.map((t) => h("th", { scope: "col" }, t)))),
      h("tbody", {}, rows)),
  );
  setChildren(els.pager, pager({
    page: state.page, pageSize: state.pageSize, total, testid: "case-pager",
    onPage: (p) => {
      state.page = p;
      loadCases();
    },
  }));
}

function clip(text, n) {
  // The excerpt is Markdown; in one table cell its marks are noise.
  const t = (text || "").replace(/[*`#>]+/g, "").replace(/\s+/g, " ").trim();
  return t.length > n ? `${t.slice(0, n)}…` : t || "—";
}

// ---- detail -------------------------------------------------------------------------------------

function section(title, text, testid) {
  if (!text) return null;
  const body = h("div", { class: "md content-block", "data-testid": testid });
  setMarkdown(body, text);
  return [h("h3", {}, title), body];
}

async function openCase(id) {
  const token = ++detailToken;
  if (!id) {
    els.detail.hidden = true;
    return;
  }
  for (const tr of els.table.querySelectorAll("tr[data-case-id]")) {
    tr.classList.toggle("selected", tr.dataset.caseId === id);
  }
  els.detail.hidden = false;
  setChildren(els.detail, loadingState("正在加载案例…"));
  let c;
  try {
    c = await api(`/api/cases/${encodeURIComponent(id)}`);
  } catch (err) {
    if (token === detailToken) setChildren(els.detail, errorBox(`案例加载失败：${describeError(err)}`, "case-detail-error"));
    return;
  }
  if (token !== detailToken) return;
  const s = c.session;
  const sid = pick(c, "sessionId");
  const solution = c.solution === c.problem ? null : c.solution;
  setChildren(
    els.detail,
    h("div", { class: "page-head" },
      h("h2", { id: "case-detail-title", "data-testid": "case-title" }, c.title),
      h("div", { class: "actions" },
        h("a", { class: "button", href: `/sessions#${encodeURIComponent(sid)}`, "data-testid": "case-session-link" }, "查看会话记录"),
        h("button", { type: "button", "data-testid": "case-export-scenario", onclick: () => openScenarioExport(pick(c, "caseId")) }, "导出为评测场景"),
        h("button", { type: "button", class: "danger", "data-testid": "case-retract", onclick: () => retract(sid) }, "撤回（标记为没用）"))),
    h("dl", { class: "meta" },
      h("dt", {}, "案例 ID"), h("dd", { class: "mono" }, pick(c, "caseId")),
      h("dt", {}, "分类 / 来源"), h("dd", {}, `${c.category} / ${c.source}`),
      h("dt", {}, "创建时间"), h("dd", {}, fmtDate(pick(c, "createdAt"))),
      s ? [h("dt", {}, "会话状态"), h("dd", {}, statusBadge(s.status), " ", pick(s, "agentFlow") || ""),
        h("dt", {}, "证据评分 Evidence"), h("dd", { "data-testid": "case-evidence" }, String(pick(s, "evidenceScore") ?? "—"))] : null),
    section("问题 Problem", c.problem, "case-problem"),
    section("解决方案 Solution", solution, "case-solution"),
  );
  els.detail.focus({ preventScroll: true });
  els.detail.scrollIntoView({ block: "start", behavior: "smooth" });
}

// Retracting is the feedback "not_useful" on the case's session: the server removes the case.
async function retract(sessionId) {
  const yes = await confirmDialog({
    title: "撤回这个案例？",
    message: "会话的反馈将改为「没用 not_useful」，案例从案例库中移除。之后在 API 中再次标记「有用」会重新归档。",
    confirmLabel: "撤回",
    danger: true,
  });
  if (!yes) return;
  try {
    const res = await api("/api/feedback", { method: "POST", json: { sessionId, feedback: "not_useful" } });
    history.replaceState(null, "", location.pathname + location.search);
    setChildren(els.detail, okBox(`已撤回：${res.message}`, "case-retracted"));
    state.items = [];
    loadCases();
  } catch (err) {
    els.detail.prepend(errorBox(`撤回失败：${describeError(err)}`, "case-retract-error"));
  }
}

// ---- wiring -------------------------------------------------------------------------------------

const onSearch = debounce(() => {
  state.q = els.search.value.trim();
  state.page = 1;
  loadCases();
}, 250);
els.search.addEventListener("input", onSearch);
els.pageSize.addEventListener("change", () => {
  state.pageSize = Number(els.pageSize.value) || 20;
  state.page = 1;
  loadCases();
});
$("case-filters").addEventListener("submit", (ev) => ev.preventDefault());
$("case-refresh").addEventListener("click", () => {
  loadCases();
  if (currentId()) openCase(currentId());
});
window.addEventListener("hashchange", () => openCase(currentId()));

initShell();
loadCases();
if (currentId()) openCase(currentId());
