// Documents page, what an operator does to one document (from its row or its detail): re-index,
// disable / enable, delete. The outcome shows in the message line above the table.

import { api, describeError } from "./api.js";
import { confirmDialog, errorBox, h, okBox, pick, setChildren } from "./ui.js";
import { isEnabled, setEnabled } from "./doc_meta.js";

const message = document.getElementById("doc-message");

function flash(node) {
  setChildren(message, node);
}

/** The actions; `refresh` reloads the page's data after each, `onDeleted` runs after a delete. */
export function docActions({ refresh, onDeleted }) {
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
    await refresh();
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
    await refresh();
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
      onDeleted();
    } catch (err) {
      flash(errorBox(`删除失败：${describeError(err)}`, "doc-action-error"));
    }
    await refresh();
  }

  return { reindex, toggleButton, removeDoc };
}
