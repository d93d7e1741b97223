// Documents page, the detail drawer of one document: its actions, fields, frontmatter metadata
// (summary, keywords, covers, when to retrieve, derived fields, sections) and its chunks.

import { api, describeError } from "./api.js";
import {
  errorBox, fmtBytes, fmtDate, h, json, jsonDetails, loadingState, openDialog, pick, setChildren,
  statusBadge, wireDialog,
} from "./ui.js";
import { chunkList, detailFields, disabledBadge } from "./doc_meta.js";

const $ = (id) => document.getElementById(id);
const dialog = wireDialog($("detail-dialog"));
const body = $("detail-body");
const title = $("detail-title");

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

export function closeDetail() {
  if (dialog.open) dialog.close();
}

/** `openDetail(docId)` for the document actions of doc_actions.js. */
export function docDetail({ reindex, toggleButton, removeDoc }) {
  async function openDetail(docId) {
    title.textContent = "文档详情";
    setChildren(body, loadingState());
    openDialog(dialog);
    let d;
    try {
      d = await api(`/api/documents/${encodeURIComponent(docId)}`);
    } catch (err) {
      setChildren(body, errorBox(`加载失败：${describeError(err)}`, "detail-error"));
      return;
    }
    const md = d.metadata || {};
    const chunks = d.chunks || [];
    title.textContent = d.title || pick(d, "fileName") || "文档详情";
    const keywords = md.keywords || [];
    const warnings = md.warnings || [];
    const derived = md.derived;
    setChildren(
      body,
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

  return openDetail;
}
