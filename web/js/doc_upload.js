// Documents page, the upload form: client-side checks (type, size, category, chunking), the
// category suggested from the file's frontmatter, and the upload's outcome with its warnings.

import { ApiError, api, describeError } from "./api.js";
import { clear, errorBox, fmtBytes, h, json, loadingState, okBox, openDialog, pick, setChildren, wireDialog } from "./ui.js";
import { appendUploadFields, chunkFieldErrors } from "./doc_meta.js";

const MAX_UPLOAD_BYTES = 10 * 1024 * 1024;
const CATEGORY_RE = /^[a-z0-9][a-z0-9_-]*$/;
const ALLOWED_EXT = [".md", ".markdown", ".txt"];

const $ = (id) => document.getElementById(id);
const els = {
  dialog: wireDialog($("upload-dialog")),
  form: $("upload-form"),
  file: $("upload-file"),
  category: $("upload-category"),
  replace: $("upload-replace"),
  message: $("upload-message"),
  submit: $("upload-submit"),
};

export function openUpload() {
  clear(els.message);
  els.submit.disabled = false;
  openDialog(els.dialog);
  els.file.focus();
}

function validateUpload() {
  const errors = chunkFieldErrors();
  const file = els.file.files?.[0];
  if (!file) errors.push("请选择文件。");
  else {
    const lower = file.name.toLowerCase();
    if (!ALLOWED_EXT.some((e) => lower.endsWith(e))) errors.push(`不支持的文件类型：${file.name}（只接受 .md / .markdown / .txt）。`);
    if (file.size > MAX_UPLOAD_BYTES) errors.push(`文件 ${fmtBytes(file.size)} 超过 10 MB 上限。`);
    if (file.size === 0) errors.push("文件是空的。");
  }
  const cat = els.category.value.trim();
  if (!CATEGORY_RE.test(cat)) errors.push("分类只能包含小写字母、数字、_ 和 -，并以字母或数字开头（例如 infrastructure）。");
  els.category.setAttribute("aria-invalid", String(!CATEGORY_RE.test(cat)));
  return errors;
}

function uploadOutcome(res) {
  const r = res.result || {};
  const doc = res.document || {};
  const failed = r.status === "FAILED" || r.error;
  const warnings = r.warnings || [];
  const derived = r.derived;
  const derivedList = Array.isArray(derived) ? derived : derived && typeof derived === "object" ? Object.keys(derived) : [];
  return [
    failed
      ? errorBox(`导入失败：${pick(r, "filePath") || ""} — ${r.error || r.status}`, "upload-error")
      : okBox(`已上传：${pick(r, "filePath") || pick(doc, "filePath")}（${r.status || doc.status}，${r.chunks ?? pick(doc, "chunkCount") ?? "?"} chunks）`, "upload-result"),
    warnings.length ? h("div", { class: "alert warn", "data-testid": "upload-warnings" }, h("strong", {}, "警告："),
      h("ul", {}, warnings.map((w) => h("li", {}, typeof w === "string" ? w : json(w))))) : null,
    derivedList.length ? h("p", { class: "muted small-text", "data-testid": "upload-derived" }, `自动推导的字段：${derivedList.join(", ")}`) : null,
  ];
}

/** Wires the form; `afterUpload` runs after each upload attempt (sent, whatever its outcome). */
export function initUpload({ afterUpload }) {
  els.file.addEventListener("change", () => {
    const file = els.file.files?.[0];
    if (!file) return;
    // Suggest the category from frontmatter if the operator has not typed one.
    if (!els.category.value && file.size < 256 * 1024) {
      file.text().then((text) => {
        const m = text.match(/^---[\s\S]*?^category:\s*["']?([a-z0-9][a-z0-9_-]*)["']?\s*$/m);
        if (m && !els.category.value) els.category.value = m[1];
      }).catch(() => {});
    }
  });

  els.form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const errors = validateUpload();
    if (errors.length) {
      setChildren(els.message, errorBox(errors.join(" "), "upload-error"));
      return;
    }
    const form = new FormData();
    form.append("file", els.file.files[0]);
    form.append("category", els.category.value.trim());
    form.append("replace", els.replace.checked ? "true" : "false");
    appendUploadFields(form);
    els.submit.disabled = true;
    setChildren(els.message, loadingState("上传并索引中…（首次向量化可能需要几秒）"));
    try {
      const res = await api("/api/documents/upload", { method: "POST", form });
      setChildren(els.message, ...uploadOutcome(res));
      els.form.reset();
    } catch (err) {
      let msg = describeError(err);
      if (err instanceof ApiError && err.status === 409 && !els.replace.checked) msg += " — 如需覆盖，请勾选「覆盖同名文档」。";
      setChildren(els.message, errorBox(`上传失败：${msg}`, "upload-error"));
    } finally {
      els.submit.disabled = false;
    }
    await afterUpload();
  });
}
