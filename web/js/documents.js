// Documents page: status cards (filters), searchable/paginated table, upload, detail, re-index,
// disable / enable, delete, and the knowledge-base re-import with per-file progress. The seed's
// document fields (fault source, API name, version, chunking) are rendered by doc_meta.js.

import { ApiError, api, describeError } from "./api.js";
import { embeddingText, importShare } from "./startup.js";
import {
  clear, confirmDialog, debounce, emptyState, errorBox, fmtBytes, fmtDate, h, initShell, json,
  jsonDetails, loadingState, okBox, openDialog, pager, pick, refreshHealth, setChildren, statusBadge,
  wireDialog,
} from "./ui.js";
import {
  appendUploadFields, chunkFieldErrors, chunkList, detailFields, disabledBadge, isEnabled,
  loadFaultSources, setEnabled,
} from "./doc_meta.js";
import { openDraft } from "./draft.js";

const STATUSES = [
  ["PENDING", "待处理 PENDING"],
  ["PROCESSING", "处理中 PROCESSING"],
  ["INDEXED", "已索引 INDEXED"],
  ["FAILED", "失败 FAILED"],
];
const MAX_UPLOAD_BYTES = 10 * 1024 * 1024;
const CATEGORY_RE = /^[a-z0-9][a-z0-9_-]*$/;
const ALLOWED_EXT = [".md", ".markdown", ".txt"];

const $ = (id) => document.getElementById(id);
const els = {
  cards: $("status-cards"),
  statsLine: $("stats-line"),
  q: $("doc-q"),
  category: $("doc-category"),
  faultSource: $("doc-fault-source"),
  pageSize: $("doc-page-size"),
  table: $("doc-table"),
  pager: $("doc-pager"),
  message: $("doc-message"),
  uploadDialog: wireDialog($("upload-dialog")),
  uploadForm: $("upload-form"),
  uploadFile: $("upload-file"),
  uploadCategory: $("upload-category"),
  uploadReplace: $("upload-replace"),
  uploadMessage: $("upload-message"),
  uploadSubmit: $("upload-submit"),
  categoryOptions: $("category-options"),
  reimportDialog: wireDialog($("reimport-dialog")),
  reimportForce: $("reimport-force"),
  reimportStart: $("reimport-start"),
  reimportProgress: $("reimport-progress"),
  detailDialog: wireDialog($("detail-dialog")),
  detailBody: $("detail-body"),
  detailTitle: $("detail-title"),
};

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

function flash(node) {
  setChildren(els.message, node);
}

// ---- stats / cards ------------------------------------------------------------------------------

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
        h("span", { class: "count", "data-testid": `status-count-${key}` }, String(by[key] ?? 0)),
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
  setChildren(
    els.statsLine,
    `共 ${s.documents ?? 0} 篇文档 · ${s.vectors ?? "—"} 个向量 (chunks) · knowledgeVersion ${pick(s, "knowledgeVersion") ?? "—"} · 最近索引 ${fmtDate(pick(s, "lastIndexedAt"))}`,
    importing ? h("span", { class: "badge status-RUNNING", "data-testid": "importing-badge", style: { marginLeft: "8px" } }, "导入进行中…") : null,
  );
  if (importing) schedulePoll();
}

// ---- table --------------------------------------------------------------------------------------

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
  const rows = state.items.map((d) => {
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
          toggleButton(d, "doc-toggle"),
          h("button", { type: "button", class: "small", "data-testid": "doc-reindex", onclick: (ev) => reindex(d, ev.currentTarget) }, "重建索引"),
          h("button", { type: "button", class: "small", "data-testid": "doc-delete", onclick: () => removeDoc(d) }, "删除"))),
    );
  });
  setChildren(
    els.table,
    h("table", { class: "data stack" },
      h("thead", {}, h("tr", {}, head.map((t, i) => h("th", { scope: "col", class: i === 6 ? "num" : null }, t)))),
      h("tbody", {}, rows)),
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

async function refreshAll() {
  await Promise.all([loadStats(), loadDocuments({ quiet: true }), refreshHealth()]);
}

// ---- actions ------------------------------------------------------------------------------------

async function reindex(doc, button) {
  const docId = pick(doc, "docId");
  if (button) button.disabled = true;
  flash(h("div", { class: "loading" }, `正在重建索引：${pick(doc, "filePath")}…`));
  try {
    const res = await api(`/api/documents/${encodeURIComponent(docId)}/reindex`, { method: "POST" });
    const r = res.result || {};
    flash(r.status === "FAILED" || r.error
      ? errorBox(`重建索引失败：${pick(r, "filePath") || pick(doc, "filePath")} — ${r.error || r.status}`, "doc-action-error")
      : okBox(`已重建索引：${pick(r, "filePath") || pick(doc, "filePath")}（${r.status ?? "INDEXED"}，${r.chunks ?? "?"} chunks）`, "doc-action-ok"));
  } catch (err) {
    flash(errorBox(`重建索引失败：${describeError(err)}`, "doc-action-error"));
  } finally {
    if (button) button.disabled = false;
  }
  await refreshAll();
  return true;
}

function toggleButton(doc, testid, after) {
  const on = isEnabled(doc);
  return h("button", {
    type: "button", class: "small", "data-testid": testid,
    title: on ? "停用：保留文档和向量，但检索不再返回它" : "启用：重新参与检索（无需重新向量化）",
    onclick: (ev) => toggle(doc, ev.currentTarget, after),
  }, on ? "停用" : "启用");
}

async function toggle(doc, button, after) {
  const enable = !isEnabled(doc);
  if (button) button.disabled = true;
  try {
    await setEnabled(doc, enable);
    flash(okBox(`已${enable ? "启用" : "停用"}：${pick(doc, "filePath")}${enable ? "" : "（检索不再返回它）"}`, "doc-action-ok"));
  } catch (err) {
    flash(errorBox(`${enable ? "启用" : "停用"}失败：${describeError(err)}`, "doc-action-error"));
  } finally {
    if (button) button.disabled = false;
  }
  await refreshAll();
  if (after) after();
}

async function removeDoc(doc) {
  const docId = pick(doc, "docId");
  const name = doc.title || pick(doc, "filePath");
  const ok = await confirmDialog({
    title: "删除文档",
    message: `确认删除《${name}》（${pick(doc, "filePath")}）？文件、向量和记录都会被删除，无法撤销。`,
    confirmLabel: "删除",
    danger: true,
  });
  if (!ok) return;
  try {
    await api(`/api/documents/${encodeURIComponent(docId)}`, { method: "DELETE" });
    flash(okBox(`已删除：${pick(doc, "filePath")}`, "doc-action-ok"));
    if (els.detailDialog.open) els.detailDialog.close();
  } catch (err) {
    flash(errorBox(`删除失败：${describeError(err)}`, "doc-action-error"));
  }
  await refreshAll();
}

// ---- detail -------------------------------------------------------------------------------------

function listOrText(value, testid) {
  if (value === null || value === undefined || value === "" || (Array.isArray(value) && !value.length))
    return h("span", { class: "muted" }, "—");
  if (Array.isArray(value)) {
    if (value.every((v) => typeof v !== "object"))
      return h("ul", { "data-testid": testid }, value.map((v) => h("li", {}, String(v))));
    return h("pre", { "data-testid": testid }, json(value));
  }
  if (typeof value === "object") return h("pre", { "data-testid": testid }, json(value));
  return h("span", { "data-testid": testid }, String(value));
}

async function openDetail(docId) {
  els.detailTitle.textContent = "文档详情";
  setChildren(els.detailBody, loadingState());
  openDialog(els.detailDialog);
  let d;
  try {
    d = await api(`/api/documents/${encodeURIComponent(docId)}`);
  } catch (err) {
    setChildren(els.detailBody, errorBox(`加载失败：${describeError(err)}`, "detail-error"));
    return;
  }
  const md = d.metadata || {};
  const chunks = d.chunks || [];
  els.detailTitle.textContent = d.title || pick(d, "fileName") || "文档详情";
  const keywords = md.keywords || [];
  const warnings = md.warnings || [];
  const derived = md.derived;
  setChildren(
    els.detailBody,
    h("div", { class: "actions", style: { marginBottom: "12px" } },
      h("button", { type: "button", class: "small", "data-testid": "detail-reindex", onclick: async (ev) => {
        await reindex(d, ev.currentTarget);
        openDetail(docId);
      } }, "重建索引"),
      toggleButton(d, "detail-toggle", () => openDetail(docId)),
      h("button", { type: "button", class: "small", "data-testid": "detail-delete", onclick: () => removeDoc(d) }, "删除")),
    pick(d, "errorMessage") ? errorBox(`错误：${pick(d, "errorMessage")}`, "detail-error-message") : null,
    warnings.length ? h("div", { class: "alert warn", "data-testid": "detail-warnings" },
      h("strong", {}, "导入警告 warnings："), h("ul", {}, warnings.map((w) => h("li", {}, typeof w === "string" ? w : json(w))))) : null,
    h("dl", { class: "meta", "data-testid": "detail-meta" },
      ...[
        ["docId", pick(d, "docId")],
        ["文件", pick(d, "fileName")],
        ["路径", pick(d, "filePath")],
        ["分类 category", d.category],
        ["状态", h("span", {}, statusBadge(d.status, "detail-status"), disabledBadge(d))],
        ...detailFields(d),
        ["chunks", pick(d, "chunkCount")],
        ["大小", fmtBytes(pick(d, "fileSize"))],
        ["创建", fmtDate(pick(d, "createdAt"))],
        ["更新", fmtDate(pick(d, "updatedAt"))],
        ["索引时间", fmtDate(pick(d, "indexedAt"))],
      ].flatMap(([k, v]) => [h("dt", {}, k), h("dd", {}, v instanceof Node ? v : String(v ?? "—"))])),
    h("h3", {}, "摘要 summary"),
    h("p", { "data-testid": "detail-summary" }, md.summary || "—"),
    h("h3", {}, "关键词 keywords"),
    h("div", { "data-testid": "detail-keywords" },
      keywords.length ? keywords.map((k) => h("span", { class: "chip" }, k)) : h("span", { class: "muted" }, "— (无 frontmatter keywords：L0 精确匹配只能靠标题)")),
    h("h3", {}, "覆盖内容 covers"),
    listOrText(md.covers, "detail-covers"),
    h("h3", {}, "何时检索 when_to_retrieve"),
    listOrText(pick(md, "whenToRetrieve") ?? md.when_to_retrieve, "detail-when"),
    h("h3", {}, "自动推导字段 derived"),
    listOrText(derived, "detail-derived"),
    md.sections ? [h("h3", {}, "章节 sections"), listOrText(md.sections, "detail-sections")] : null,
    h("h3", {}, `Chunks (${chunks.length})`),
    chunks.length
      ? chunkList(chunks)
      : h("p", { class: "muted" }, "没有 chunk（文档未索引或索引失败，可点击「重建索引」）。"),
    jsonDetails("原始 metadata (JSON)", md),
  );
}

// ---- upload -------------------------------------------------------------------------------------

function openUpload() {
  clear(els.uploadMessage);
  els.uploadSubmit.disabled = false;
  openDialog(els.uploadDialog);
  els.uploadFile.focus();
}

function validateUpload() {
  const errors = chunkFieldErrors();
  const file = els.uploadFile.files?.[0];
  if (!file) errors.push("请选择文件。");
  else {
    const lower = file.name.toLowerCase();
    if (!ALLOWED_EXT.some((e) => lower.endsWith(e))) errors.push(`不支持的文件类型：${file.name}（只接受 .md / .markdown / .txt）。`);
    if (file.size > MAX_UPLOAD_BYTES) errors.push(`文件 ${fmtBytes(file.size)} 超过 10 MB 上限。`);
    if (file.size === 0) errors.push("文件是空的。");
  }
  const cat = els.uploadCategory.value.trim();
  if (!CATEGORY_RE.test(cat)) errors.push("分类只能包含小写字母、数字、_ 和 -，并以字母或数字开头（例如 infrastructure）。");
  els.uploadCategory.setAttribute("aria-invalid", String(!CATEGORY_RE.test(cat)));
  return errors;
}

els.uploadFile.addEventListener("change", () => {
  const file = els.uploadFile.files?.[0];
  if (!file) return;
  // Suggest the category from frontmatter if the operator has not typed one.
  if (!els.uploadCategory.value && file.size < 256 * 1024) {
    file.text().then((text) => {
      const m = text.match(/^---[\s\S]*?^category:\s*["']?([a-z0-9][a-z0-9_-]*)["']?\s*$/m);
      if (m && !els.uploadCategory.value) els.uploadCategory.value = m[1];
    }).catch(() => {});
  }
});

els.uploadForm.addEventListener("submit", async (ev) => {
  ev.preventDefault();
  const errors = validateUpload();
  if (errors.length) {
    setChildren(els.uploadMessage, errorBox(errors.join(" "), "upload-error"));
    return;
  }
  const form = new FormData();
  form.append("file", els.uploadFile.files[0]);
  form.append("category", els.uploadCategory.value.trim());
  form.append("replace", els.uploadReplace.checked ? "true" : "false");
  appendUploadFields(form);
  els.uploadSubmit.disabled = true;
  setChildren(els.uploadMessage, loadingState("上传并索引中…（首次向量化可能需要几秒）"));
  try {
    const res = await api("/api/documents/upload", { method: "POST", form });
    const r = res.result || {};
    const doc = res.document || {};
    const failed = r.status === "FAILED" || r.error;
    const warnings = r.warnings || [];
    const derived = r.derived;
    const derivedList = Array.isArray(derived) ? derived : derived && typeof derived === "object" ? Object.keys(derived) : [];
    setChildren(
      els.uploadMessage,
      failed
        ? errorBox(`导入失败：${pick(r, "filePath") || ""} — ${r.error || r.status}`, "upload-error")
        : okBox(`已上传：${pick(r, "filePath") || pick(doc, "filePath")}（${r.status || doc.status}，${r.chunks ?? pick(doc, "chunkCount") ?? "?"} chunks）`, "upload-result"),
      warnings.length ? h("div", { class: "alert warn", "data-testid": "upload-warnings" }, h("strong", {}, "警告："),
        h("ul", {}, warnings.map((w) => h("li", {}, typeof w === "string" ? w : json(w))))) : null,
      derivedList.length ? h("p", { class: "muted small-text", "data-testid": "upload-derived" }, `自动推导的字段：${derivedList.join(", ")}`) : null,
    );
    els.uploadForm.reset();
  } catch (err) {
    let msg = describeError(err);
    if (err instanceof ApiError && err.status === 409 && !els.uploadReplace.checked) msg += " — 如需覆盖，请勾选「覆盖同名文档」。";
    setChildren(els.uploadMessage, errorBox(`上传失败：${msg}`, "upload-error"));
  } finally {
    els.uploadSubmit.disabled = false;
  }
  state.page = 1;
  await refreshAll();
});

// ---- re-import ----------------------------------------------------------------------------------

let jobTimer = null;

function openReimport() {
  openDialog(els.reimportDialog);
  els.reimportStart.focus();
}

function renderJob(job) {
  const total = job.total || 0;
  const processed = job.processed || 0;
  // Per chunk batch too: a window of files is embedded before any of them is written.
  const pct = total ? Math.round(importShare(job) * 100) : job.status === "running" ? 0 : 100;
  const files = job.files || [];
  setChildren(
    els.reimportProgress,
    h("p", {}, "任务 ", h("code", {}, pick(job, "jobId")), " ", statusBadge(job.status, "job-status"),
      ` ${processed} / ${total}`,
      job.embedding ? h("span", { class: "muted", "data-testid": "job-embedding" }, ` · ${embeddingText(job.embedding)}`) : null),
    h("div", { class: "progress", role: "progressbar", "aria-valuemin": "0", "aria-valuemax": "100", "aria-valuenow": String(pct), "aria-label": "导入进度" },
      h("span", { style: { width: `${pct}%` } })),
    job.error ? errorBox(`导入失败：${job.error}`, "job-error") : null,
    files.length
      ? h("ul", { "data-testid": "job-files", style: { paddingLeft: "18px" } },
        files.map((f) => h("li", { "data-testid": "job-file" }, h("code", {}, f.file), " ", statusBadge(f.status, "job-file-status"),
          f.chunks !== undefined && f.chunks !== null ? ` ${f.chunks} chunks` : "",
          f.error ? h("div", { class: "field-error small-text" }, f.error) : null)))
      : job.status === "running" ? loadingState("扫描文件中…") : null,
    job.status !== "running" && !files.length && !job.error
      ? h("p", { class: "muted", "data-testid": "job-nothing" }, "没有新增或改动的文件，知识库已是最新。勾选「强制重建 (force)」可重新索引全部文档。")
      : null,
    job.summary ? h("p", { "data-testid": "job-summary" }, summaryText(job.summary)) : null,
    job.summary ? jsonDetails("summary (JSON)", job.summary) : null,
  );
}

function summaryText(sm) {
  const parts = ["total", "indexed", "failed", "skipped", "removed"]
    .filter((k) => sm[k] !== undefined)
    .map((k) => `${k} ${sm[k]}`);
  const ms = pick(sm, "durationMs");
  if (ms !== undefined) parts.push(`${(Number(ms) / 1000).toFixed(1)} s`);
  return parts.join(" · ");
}

async function pollJob(jobId) {
  clearTimeout(jobTimer);
  try {
    const job = await api(`/api/knowledge/jobs/${encodeURIComponent(jobId)}`);
    renderJob(job);
    if (job.status === "running") {
      jobTimer = setTimeout(() => pollJob(jobId), 800);
      return;
    }
    els.reimportStart.disabled = false;
    refreshAll();
  } catch (err) {
    els.reimportProgress.append(errorBox(`查询任务失败：${describeError(err)}`, "job-error"));
    els.reimportStart.disabled = false;
  }
}

els.reimportStart.addEventListener("click", async () => {
  els.reimportStart.disabled = true;
  setChildren(els.reimportProgress, loadingState("正在启动导入…"));
  try {
    const res = await api("/api/knowledge/init", { method: "POST", query: { force: els.reimportForce.checked ? "true" : "false" } });
    pollJob(pick(res, "jobId"));
  } catch (err) {
    setChildren(els.reimportProgress, errorBox(`无法开始导入：${describeError(err)}`, "job-error"));
    els.reimportStart.disabled = false;
  }
});

// ---- wiring -------------------------------------------------------------------------------------

$("upload-open").addEventListener("click", openUpload);
$("reimport-open").addEventListener("click", openReimport);
$("doc-refresh").addEventListener("click", () => refreshAll());
$("doc-clear").addEventListener("click", clearFilters);
$("doc-filters").addEventListener("submit", (ev) => {
  ev.preventDefault();
  state.q = els.q.value.trim();
  state.page = 1;
  loadDocuments();
});
els.q.addEventListener("input", debounce(() => {
  state.q = els.q.value.trim();
  state.page = 1;
  loadDocuments();
}, 300));
els.category.addEventListener("change", () => {
  state.category = els.category.value;
  state.page = 1;
  loadDocuments();
});
els.faultSource.addEventListener("change", () => {
  state.faultSource = els.faultSource.value;
  state.page = 1;
  loadDocuments();
});
els.pageSize.addEventListener("change", () => {
  state.pageSize = Number(els.pageSize.value) || 20;
  state.page = 1;
  loadDocuments();
});

els.q.value = state.q;
els.pageSize.value = String(state.pageSize);
initShell();
window.addEventListener("superbiz:started", () => refreshAll()); // the server finished starting
renderCards();
loadStats();
loadDocuments();
openDraft(openUpload); // a runbook drafted from the knowledge-gap report (insights page)
