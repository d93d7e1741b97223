// Documents page, the seed's document fields: fault source / API name / version / chunking in the
// upload form, the list and the detail; the fault-source filter; disable / enable; the open chunk list.

import { api } from "./api.js";
import { h, pick, setChildren } from "./ui.js";

const $ = (id) => document.getElementById(id);

// Upload form inputs → the multipart field names of POST /api/documents/upload.
const UPLOAD_FIELDS = [
  ["upload-fault-source", "faultSource"],
  ["upload-api-name", "apiName"],
  ["upload-version", "version"],
  ["upload-chunk-size", "chunkSize"],
  ["upload-chunk-overlap", "chunkOverlap"],
];

/** Adds the metadata the operator filled in; empty fields are left out (server defaults apply). */
export function appendUploadFields(form) {
  for (const [id, name] of UPLOAD_FIELDS) {
    const value = $(id)?.value.trim();
    if (value) form.append(name, value);
  }
}

/** Client-side checks of the chunk parameters (the server checks them against the model's window). */
export function chunkFieldErrors() {
  const errors = [];
  const size = $("upload-chunk-size").value.trim();
  const overlap = $("upload-chunk-overlap").value.trim();
  if (size && !(Number.isInteger(Number(size)) && Number(size) >= 32))
    errors.push("分块大小须为不小于 32 的整数（token）。");
  if (overlap && !(Number.isInteger(Number(overlap)) && Number(overlap) >= 0))
    errors.push("分块重叠须为不小于 0 的整数（token）。");
  if (size && overlap && Number(overlap) > Number(size) / 2) errors.push("分块重叠不能超过分块大小的一半。");
  return errors;
}

/** Fills the fault-source filter from GET /api/documents/faultSources, keeping the current choice. */
export async function loadFaultSources(select, current) {
  let sources = [];
  try {
    sources = await api("/api/documents/faultSources");
  } catch {
    sources = [];
  }
  setChildren(
    select,
    h("option", { value: "" }, "全部"),
    sources.map((s) => h("option", { value: pick(s, "faultSource") }, `${pick(s, "faultSource")} (${s.documents})`)),
  );
  if (current && !sources.some((s) => pick(s, "faultSource") === current))
    select.append(h("option", { value: current }, current));
  select.value = current || "";
}

export function isEnabled(doc) {
  return doc.enabled !== false;
}

/** The "disabled" badge shown next to a document's status. */
export function disabledBadge(doc) {
  return isEnabled(doc) ? null : h("span", { class: "badge doc-off", "data-testid": "doc-disabled" }, "已停用 disabled");
}

export function chunkParams(doc) {
  const size = pick(doc, "chunkSize");
  const overlap = pick(doc, "chunkOverlap");
  if (size === null || size === undefined) return "—";
  return `${size} / ${overlap ?? 0} tokens`;
}

/** Rows of the detail's metadata list. */
export function detailFields(doc) {
  return [
    ["故障源 faultSource", pick(doc, "faultSource") || "—"],
    ["接口名称 apiName", pick(doc, "apiName") || "—"],
    ["版本 version", doc.version || "v1.0"],
    ["分块参数 size / overlap", chunkParams(doc)],
    ["启用 enabled", isEnabled(doc) ? "是 — 检索可返回" : "否 — 已停用，检索不会返回"],
  ];
}

/** PATCH /api/documents/{id} {"enabled"}; returns the updated document. */
export function setEnabled(doc, enabled) {
  return api(`/api/documents/${encodeURIComponent(pick(doc, "docId"))}`, { method: "PATCH", json: { enabled } });
}

/** Every chunk shown open: breadcrumb, token count, text. */
export function chunkList(chunks) {
  return h(
    "div",
    { "data-testid": "detail-chunks" },
    chunks.map((c) => {
      const tokens = pick(c, "tokenCount");
      return h(
        "section",
        { class: "chunk", "data-testid": "detail-chunk" },
        h(
          "div",
          { class: "chunk-head" },
          h("span", {}, `#${c.index} · ${c.breadcrumb || "—"}`),
          h("span", { class: "nowrap", "data-testid": "chunk-tokens" }, tokens === null || tokens === undefined ? "" : `${tokens} tokens`),
        ),
        h("pre", {}, c.text || ""),
      );
    }),
  );
}
