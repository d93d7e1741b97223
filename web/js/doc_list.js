// Documents page, the list: status cards (filters) with the knowledge-base stats, the filter
// toolbar, the searchable / paginated table (kept in the URL) and polling while documents index.

import { api, describeError } from "./api.js";
import {
  clear, debounce, emptyState, errorBox, fmtDate, h, loadingState, pager, pick, setChildren,
  statusBadge,
} from "./ui.js";
import { disabledBadge, isEnabled, loadFaultSources } from "./doc_meta.js";

const STATUSES = [
  ["PENDING", "待处理 PENDING"],
  ["PROCESSING", "处理中 PROCESSING"],
  ["INDEXED", "已索引 INDEXED"],
  ["FAILED", "失败 FAILED"],
];

const $ = (id) => document.getElementById(id);
const els = {
  cards: $("status-cards"),
  statsLine: $("stats-line"),
  filters: $("doc-filters"),
  q: $("doc-q"),
  category: $("doc-category"),
  faultSource: $("doc-fault-source"),
  pageSize: $("doc-page-size"),
  table: $("doc-table"),
  pager: $("doc-pager"),
  categoryOptions: $("category-options"),
};

/** The list; rows open `openDetail(docId)` and carry the `actions` of doc_actions.js. */
export function docList({ actions, openDetail, openUpload, openReimport }) {
  const params = new URLSearchParams(location.search);
  const state = {
    status: params.get("status") || "",
    category: params.get("category") || "",
    faultSource: params.get("faultSource") || "",
    q: params.get("q") || "",
    page: Number(params.get("page")) || 1,
    pageSize: Number(params.get("pageSize")) || 20,
    stats: null,
    items: [],
  };
  let listToken = 0;
  let pollTimer = null;

  function syncUrl() {
    const p = new URLSearchParams();
    if (state.status) p.set("status", state.status);
    if (state.category) p.set("category", state.category);
    if (state.faultSource) p.set("faultSource", state.faultSource);
    if (state.q) p.set("q", state.q);
    if (state.page > 1) p.set("page", String(state.page));
    if (state.pageSize !== 20) p.set("pageSize", String(state.pageSize));
    const qs = p.toString();
    history.replaceState(null, "", qs ? `?${qs}` : location.pathname);
  }

  // ---- stats / cards ----------------------------------------------------------------------------

  async function loadStats() {
    try {
      state.stats = await api("/api/knowledge/stats");
    } catch (err) {
      setChildren(els.statsLine, errorBox(`统计加载失败：${describeError(err)}`, "stats-error"));
      return;
    }
    renderCards();
    loadFaultSources(els.faultSource, state.faultSource);
  }

  function renderCards() {
    // Before the stats arrive the cards say so: a "0" there would read as an empty base.
    const loaded = state.stats !== null;
    const s = state.stats || {};
    const by = pick(s, "byStatus") || {};
    clear(els.cards);
    for (const [key, label] of STATUSES) {
      const active = state.status === key;
      els.cards.append(
        h(
          "button",
          {
            type: "button",
            class: `card st-${key}`,
            "aria-pressed": String(active),
            "data-testid": `status-card-${key}`,
            title: active ? "再次点击取消筛选" : `只显示 ${key} 的文档`,
            onclick: () => {
              state.status = active ? "" : key;
              state.page = 1;
              renderCards();
              loadDocuments();
            },
          },
          h("span", { class: "count", "data-testid": `status-count-${key}` }, loaded ? String(by[key] ?? 0) : "…"),
          h("span", { class: "label" }, label),
        ),
      );
    }
    const cats = pick(s, "byCategory") || {};
    const current = state.category;
    setChildren(
      els.category,
      h("option", { value: "" }, "全部"),
      Object.entries(cats).map(([c, n]) => h("option", { value: c }, `${c} (${n})`)),
    );
    if (current && !(current in cats)) els.category.append(h("option", { value: current }, current));
    els.category.value = current;
    setChildren(els.categoryOptions, Object.keys(cats).map((c) => h("option", { value: c })));
    const importing = Boolean(s.importing);
    if (!loaded) {
      setChildren(els.statsLine, "正在加载统计…");
      return;
    }
    setChildren(
      els.statsLine,
      `共 ${s.documents ?? 0} 篇文档 · ${s.vectors ?? "—"} 个向量 (chunks) · knowledgeVersion ${pick(s, "knowledgeVersion") ?? "—"} · 最近索引 ${fmtDate(pick(s, "lastIndexedAt"))}`,
      importing ? h("span", { class: "badge status-RUNNING", "data-testid": "importing-badge", style: { marginLeft: "8px" } }, "导入进行中…") : null,
    );
    if (importing) schedulePoll();
  }

  // ---- table ------------------------------------------------------------------------------------

  async function loadDocuments({ quiet = false } = {}) {
    syncUrl();
    const token = ++listToken;
    if (!quiet) {
      els.table.setAttribute("aria-busy", "true");
      if (!state.items.length) setChildren(els.table, loadingState("正在加载文档…"));
    }
    let data;
    try {
      data = await api("/api/documents", {
        query: {
          status: state.status, category: state.category, faultSource: state.faultSource, q: state.q,
          page: state.page, pageSize: state.pageSize,
        },
      });
    } catch (err) {
      if (token !== listToken) return;
      els.table.removeAttribute("aria-busy");
      setChildren(els.table, errorBox(`文档列表加载失败：${describeError(err)}`, "doc-table-error"));
      return;
    }
    if (token !== listToken) return;
    els.table.removeAttribute("aria-busy");
    state.items = data.items || [];
    const total = data.total ?? state.items.length;
    const pages = Math.max(1, Math.ceil(total / state.pageSize));
    if (state.page > pages && total > 0) {
      state.page = pages;
      loadDocuments();
      return;
    }
    renderTable(total);
    if (state.items.some((d) => d.status === "PENDING" || d.status === "PROCESSING")) schedulePoll();
  }

  function filtered() {
    return Boolean(state.status || state.category || state.faultSource || state.q);
  }

  function clearFilters() {
    state.status = "";
    state.category = "";
    state.faultSource = "";
    state.q = "";
    state.page = 1;
    els.q.value = "";
    els.faultSource.value = "";
    renderCards();
    loadDocuments();
  }

  function docRow(d, head) {
    const docId = pick(d, "docId");
    return h(
      "tr",
      {
        "data-testid": "doc-row", "data-doc-id": docId, "data-file-path": pick(d, "filePath"), "data-status": d.status,
        "data-enabled": String(isEnabled(d)), class: isEnabled(d) ? null : "doc-disabled",
      },
      h("td", { "data-label": head[0] },
        h("button", { type: "button", class: "link", "data-testid": "doc-open", onclick: () => openDetail(docId) }, d.title || pick(d, "fileName") || docId)),
      h("td", { "data-label": head[1], class: "mono", "data-testid": "doc-path" }, pick(d, "filePath")),
      h("td", { "data-label": head[2] }, d.category || "—"),
      h("td", { "data-label": head[3], "data-testid": "doc-fault-source" }, pick(d, "faultSource") || "—"),
      h("td", { "data-label": head[4], class: "nowrap", "data-testid": "doc-version" }, d.version || "v1.0"),
      h("td", { "data-label": head[5] }, statusBadge(d.status, "doc-status"), disabledBadge(d),
        pick(d, "errorMessage") ? h("div", { class: "field-error small-text" }, pick(d, "errorMessage")) : null),
      h("td", { "data-label": head[6], class: "num" }, String(pick(d, "chunkCount") ?? "—")),
      h("td", { "data-label": head[7], class: "nowrap" }, fmtDate(pick(d, "updatedAt"))),
      h("td", { "data-label": head[8] },
        h("div", { class: "actions" },
          h("button", { type: "button", class: "small", "data-testid": "doc-detail-button", onclick: () => openDetail(docId) }, "详情"),
          actions.toggleButton(d, "doc-toggle"),
          h("button", { type: "button", class: "small", "data-testid": "doc-reindex", onclick: (ev) => actions.reindex(d, ev.currentTarget) }, "重建索引"),
          h("button", { type: "button", class: "small", "data-testid": "doc-delete", onclick: () => actions.removeDoc(d) }, "删除"))),
    );
  }

  function renderTable(total) {
    if (!state.items.length) {
      setChildren(
        els.table,
        filtered()
          ? emptyState("没有符合筛选条件的文档。", h("button", { type: "button", onclick: clearFilters }, "清除筛选"))
          : emptyState("还没有文档：点击「上传文档」或「重新导入知识库」。",
            h("div", { class: "actions", style: { justifyContent: "center" } },
              h("button", { type: "button", class: "primary", onclick: openUpload }, "上传文档"),
              h("button", { type: "button", onclick: openReimport }, "重新导入知识库"))),
      );
      clear(els.pager);
      return;
    }
    const head = ["标题 Title", "文件路径 File", "分类", "故障源", "版本", "状态", "Chunks", "更新时间", "操作"];
    setChildren(
      els.table,
      h("table", { class: "data stack" },
        h("thead", {}, h("tr", {}, head.map((t, i) => h("th", { scope: "col", class: i === 6 ? "num" : null }, t)))),
        h("tbody", {}, state.items.map((d) => docRow(d, head)))),
    );
    setChildren(
      els.pager,
      pager({
        page: state.page, pageSize: state.pageSize, total, testid: "doc-pager",
        onPage: (p) => {
          state.page = p;
          loadDocuments();
        },
      }),
    );
  }

  function schedulePoll() {
    if (pollTimer) return;
    pollTimer = setTimeout(async () => {
      pollTimer = null;
      await Promise.all([loadStats(), loadDocuments({ quiet: true })]);
    }, 2000);
  }

  // ---- filters ----------------------------------------------------------------------------------

  function filterBy(key, value) {
    state[key] = value;
    state.page = 1;
    loadDocuments();
  }

  $("doc-clear").addEventListener("click", clearFilters);
  els.filters.addEventListener("submit", (ev) => {
    ev.preventDefault();
    filterBy("q", els.q.value.trim());
  });
  els.q.addEventListener("input", debounce(() => filterBy("q", els.q.value.trim()), 300));
  els.category.addEventListener("change", () => filterBy("category", els.category.value));
  els.faultSource.addEventListener("change", () => filterBy("faultSource", els.faultSource.value));
  els.pageSize.addEventListener("change", () => filterBy("pageSize", Number(els.pageSize.value) || 20));
  els.q.value = state.q;
  els.pageSize.value = String(state.pageSize);

  /** The first page: cards from the URL's filters, then the stats and the documents. */
  function start() {
    renderCards();
    loadStats();
    loadDocuments();
  }

  return { state, loadStats, loadDocuments, start };
}
