// Citations: the document paths an answer names ("来源：infra/mysql.md" …) become links that open
// the cited chunk in a dialog — the document's chunks, the cited one marked and scrolled to.
// Which chunk a path means comes from the run's lookups (`citations` on tool_result events, or a
// recorded invocation's raw scores); a path without one opens the document at its first chunk.

import { api, describeError } from "./api.js";
import { icon } from "./icons.js";
import { errorBox, h, loadingState, pick, setChildren, wireDialog } from "./ui.js";

// A knowledge-base path as the lookup reports it: folder(s)/name.md (also .markdown / .txt). The
// generic form is ASCII, so Chinese prose around a path is never taken into it; paths the run's
// lookups returned are matched exactly, whatever their characters.
// Not inside a longer path: "/tmp/threads-1.txt" in a command is a file on a host, not a document.
const GENERIC = "(?<![A-Za-z0-9_./\\-])[A-Za-z0-9_\\-]+(?:/[A-Za-z0-9_.\\-]+)+\\.(?:md|markdown|txt)(?![A-Za-z0-9])";

function pathPattern(hints) {
  const known = [...hints.keys()].sort((a, b) => b.length - a.length).map((p) => p.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"));
  return new RegExp([...known, GENERIC].join("|"), "g");
}

/** path → {chunkIndex, breadcrumb}, from live trace events. */
export function hintsFromTrace(events) {
  const hints = new Map();
  for (const ev of events || []) {
    for (const c of ev.citations || []) addHint(hints, c.source, pick(c, "chunkIndex"), c.breadcrumb);
    if (ev.source) addHint(hints, ev.source, null, null);
  }
  return hints;
}

/** path → {chunkIndex, breadcrumb}, from recorded invocations (their raw scores, best chunk first). */
export function hintsFromInvocations(invocations) {
  const hints = new Map();
  for (const inv of invocations || []) {
    const rows = pick(pick(inv, "retrievalDetails") || {}, "l1Scores") || [];
    for (const r of rows) if (r.valid) addHint(hints, r.source, pick(r, "chunkIndex"), r.breadcrumb);
  }
  return hints;
}

function addHint(hints, source, chunkIndex, breadcrumb) {
  if (!source) return;
  const known = hints.get(source);
  if (!known || (known.chunkIndex == null && chunkIndex != null)) hints.set(source, { chunkIndex, breadcrumb });
}

/** Replace each path in `container`'s text with a citation link. Code (blocks and inline: a
 * command's `> /tmp/threads-1.txt`) and links are left alone: a path there is not a citation. */
export function linkCitations(container, hints = new Map()) {
  const walker = document.createTreeWalker(container, NodeFilter.SHOW_TEXT, {
    acceptNode: (n) => (n.parentElement?.closest("a, pre, code") ? NodeFilter.FILTER_REJECT : NodeFilter.FILTER_ACCEPT),
  });
  const pattern = pathPattern(hints);
  const nodes = [];
  while (walker.nextNode()) {
    pattern.lastIndex = 0;
    if (pattern.test(walker.currentNode.nodeValue)) nodes.push(walker.currentNode);
  }
  for (const node of nodes) node.replaceWith(...split(node.nodeValue, hints, pattern));
  return nodes.length;
}

function split(text, hints, pattern) {
  const parts = [];
  let last = 0;
  pattern.lastIndex = 0; // test() above left it past the first match
  for (const m of text.matchAll(pattern)) {
    if (m.index > last) parts.push(text.slice(last, m.index));
    parts.push(citationLink(m[0], hints.get(m[0]) || {}));
    last = m.index + m[0].length;
  }
  if (last < text.length) parts.push(text.slice(last));
  return parts;
}

function citationLink(path, { chunkIndex = null, breadcrumb = null }) {
  const chunk = chunkIndex == null ? "" : String(chunkIndex);
  return h("a", {
    class: "citation",
    href: `/documents?q=${encodeURIComponent(path)}`,
    "data-testid": "citation",
    "data-source": path,
    "data-chunk": chunk,
    title: breadcrumb ? `打开引用的片段：${breadcrumb}` : `打开引用的文档：${path}`,
    onclick: (ev) => {
      if (ev.ctrlKey || ev.metaKey || ev.shiftKey || ev.button !== 0) return; // new tab: documents page
      ev.preventDefault();
      openChunk(path, chunk === "" ? null : Number(chunk));
    },
  }, icon("file"), path);
}

// ---- the chunk dialog ---------------------------------------------------------------------------

let dialog = null;

function chunkDialog() {
  if (dialog) return dialog;
  const body = h("div", { class: "dialog-body chunk-view", "data-testid": "chunk-view-body" });
  const title = h("h2", { id: "chunk-view-title" }, "引用 Citation");
  dialog = h("dialog", { class: "wide", "aria-labelledby": "chunk-view-title", "data-testid": "chunk-view" },
    h("div", { class: "dialog-head" }, title,
      h("button", { type: "button", "data-close": "", "aria-label": "关闭" }, icon("x"))),
    body);
  dialog.parts = { body, title };
  wireDialog(dialog);
  document.body.append(dialog);
  return dialog;
}

export async function openChunk(path, chunkIndex) {
  const dlg = chunkDialog();
  const { body, title } = dlg.parts;
  title.textContent = path;
  setChildren(body, loadingState(`正在打开 ${path}…`));
  if (!dlg.open) dlg.showModal();
  let doc;
  try {
    const page = await api("/api/documents", { query: { q: path, pageSize: 50 } });
    const item = (page.items || []).find((d) => pick(d, "filePath") === path);
    if (!item) {
      setChildren(body, errorBox(`知识库里已没有 ${path}（可能已被删除或改名）；到「文档」页搜索它。`, "chunk-view-error"));
      return;
    }
    doc = await api(`/api/documents/${encodeURIComponent(pick(item, "docId"))}`);
  } catch (err) {
    setChildren(body, errorBox(`打开失败：${describeError(err)}`, "chunk-view-error"));
    return;
  }
  title.textContent = doc.title || path;
  const chunks = doc.chunks || [];
  const cited = chunkIndex ?? null;
  const views = chunks.map((c) => h("section", {
    class: `chunk${c.index === cited ? " cited" : ""}`,
    "data-testid": "chunk-view-chunk",
    "data-index": String(c.index),
    "data-cited": String(c.index === cited),
    "aria-current": c.index === cited ? "true" : null,
  },
  h("div", { class: "kv" }, h("b", {}, `#${c.index}`), h("span", { class: "muted" }, c.breadcrumb || ""),
    c.index === cited ? h("span", { class: "badge neutral" }, "引用的片段 cited") : null),
  h("pre", { class: "content-block" }, c.text || "")));
  setChildren(body,
    h("p", { class: "muted small-text" }, h("span", { class: "mono" }, path), ` · ${chunks.length} chunks · `,
      h("a", { href: `/documents?q=${encodeURIComponent(path)}` }, "在文档页打开")),
    chunks.length ? views : h("p", { class: "muted" }, "这个文档没有片段（可能还没有建好索引）。"));
  const target = body.querySelector('[data-cited="true"]');
  target?.scrollIntoView({ block: "start" });
}
