// Shared UI helpers: a DOM builder (text is always set as text, never as HTML), formatters,
// badges, dialogs and the top-nav tools (health indicator, API key).

import { api, getApiKey, setApiKey, setKeyPrompt } from "./api.js";
import { fillIcons, icon } from "./icons.js";
import { watchStartup } from "./startup.js";

/**
 * h("button", {class: "primary", onclick: fn, "data-testid": "x"}, "text", child…)
 * Strings become text nodes; null/false children are skipped; arrays are flattened.
 */
export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith("on") && typeof v === "function") el.addEventListener(k.slice(2), v);
    else if (k === "class") el.className = v;
    else if (k === "text") el.textContent = v;
    else if (k === "hidden") el.hidden = Boolean(v);
    else if (k === "disabled") el.disabled = Boolean(v);
    else if (k === "checked") el.checked = Boolean(v);
    else if (k === "value") el.value = v;
    else if (k === "style" && typeof v === "object") Object.assign(el.style, v);
    else el.setAttribute(k, v === true ? "" : String(v));
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    if (Array.isArray(c)) append(el, c);
    else el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
}

export function clear(el) {
  while (el.firstChild) el.removeChild(el.firstChild);
  return el;
}

export function setChildren(el, ...children) {
  clear(el);
  append(el, children);
  return el;
}

/** Read a field in camelCase, falling back to snake_case (tolerates either from the API). */
export function pick(obj, camel) {
  if (!obj || typeof obj !== "object") return undefined;
  if (obj[camel] !== undefined) return obj[camel];
  const snake = camel.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
  return obj[snake];
}

// ---- formatting -------------------------------------------------------------------------------

export function fmtDate(value) {
  if (!value) return "—";
  const d = new Date(/[zZ]|[+-]\d\d:?\d\d$/.test(value) ? value : `${value}Z`);
  if (Number.isNaN(d.getTime())) return String(value);
  const p = (n) => String(n).padStart(2, "0");
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())} ${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}`;
}

export function fmtDuration(ms) {
  if (ms === null || ms === undefined || ms === "") return "—";
  const n = Number(ms);
  if (!Number.isFinite(n)) return String(ms);
  if (n < 1000) return `${Math.round(n)} ms`;
  if (n < 60000) return `${(n / 1000).toFixed(1)} s`;
  return `${Math.floor(n / 60000)} min ${Math.round((n % 60000) / 1000)} s`;
}

export function fmtBytes(n) {
  if (n === null || n === undefined) return "—";
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KB`;
  return `${(n / 1024 / 1024).toFixed(1)} MB`;
}

// Cut, never rounded: a displayed score must not cross a threshold its value is under
// (0.74999 beside REFERENCE must not read 0.7500). Cut from the shortest decimal form, so no
// binary-fraction error (0.29 * 100 = 28.999…) loses a digit.
export function fmtNum(v, digits = 4) {
  if (v === null || v === undefined || v === "") return "—";
  const n = Number(v);
  if (!Number.isFinite(n)) return String(v);
  if (Number.isInteger(n)) return String(n);
  const s = String(Math.abs(n));
  if (/e/i.test(s)) return n.toFixed(digits); // tiny or huge: no threshold lives there
  const [whole, frac = ""] = s.split(".");
  return `${n < 0 ? "-" : ""}${whole}.${(frac + "0".repeat(digits)).slice(0, digits)}`;
}

export function json(value) {
  try {
    return JSON.stringify(value, null, 2);
  } catch {
    return String(value);
  }
}

// ---- badges / states ---------------------------------------------------------------------------

const LEVEL_LABEL = {
  PRECISE: "PRECISE 精确命中",
  HIGHLY_RELEVANT: "HIGHLY_RELEVANT 高度相关",
  REFERENCE: "REFERENCE 参考",
  NONE: "NONE 未命中",
};

export function levelBadge(level, { long = false } = {}) {
  const lv = level || "NONE";
  return h(
    "span",
    {
      class: `badge level-${lv}`,
      "data-testid": "relevance-badge",
      "data-level": lv,
      title: LEVEL_LABEL[lv] || lv,
    },
    long ? LEVEL_LABEL[lv] || lv : lv,
  );
}

export function statusBadge(status, testid = "status-badge") {
  const s = status || "—";
  return h("span", { class: `badge status-${s}`, "data-testid": testid }, s);
}

export function emptyState(message, ...extra) {
  return h("div", { class: "empty", "data-testid": "empty-state", role: "status" }, h("p", {}, message), ...extra);
}

export function loadingState(text = "加载中…") {
  return h("div", { class: "loading", "data-testid": "loading", role: "status" }, text);
}

export function errorBox(message, testid = "error") {
  return h("div", { class: "alert error", role: "alert", "data-testid": testid }, message);
}

export function okBox(message, testid = "ok") {
  return h("div", { class: "alert ok", role: "status", "data-testid": testid }, icon("check"), " ", message);
}

export function jsonDetails(summary, value, testid) {
  return h(
    "details",
    testid ? { "data-testid": testid } : {},
    h("summary", {}, summary),
    h("pre", {}, json(value)),
  );
}

// ---- dialogs -----------------------------------------------------------------------------------

/** Wire a <dialog>: close buttons ([data-close]) and a click on the backdrop close it.
 *  Escape is handled natively by showModal(). */
export function wireDialog(dialog) {
  dialog.addEventListener("click", (ev) => {
    if (ev.target === dialog) dialog.close("backdrop");
  });
  for (const b of dialog.querySelectorAll("[data-close]")) {
    b.addEventListener("click", () => dialog.close("cancel"));
  }
  return dialog;
}

export function openDialog(dialog) {
  if (!dialog.open) dialog.showModal();
  const first = dialog.querySelector("[autofocus], input, select, textarea, button:not([data-close])");
  first?.focus();
}

/** A confirmation dialog; resolves true when the operator confirms. */
export function confirmDialog({ title, message, confirmLabel = "确认", danger = false }) {
  return new Promise((resolve) => {
    const ok = h("button", { type: "button", class: danger ? "danger" : "primary", "data-testid": "confirm-ok" }, confirmLabel);
    const cancel = h("button", { type: "button", "data-testid": "confirm-cancel" }, "取消");
    const dlg = h(
      "dialog",
      { "aria-labelledby": "confirm-title", "data-testid": "confirm-dialog" },
      h("div", { class: "dialog-head" }, h("h2", { id: "confirm-title" }, title)),
      h("div", { class: "dialog-body" }, h("p", {}, message)),
      h("div", { class: "dialog-foot" }, cancel, ok),
    );
    let result = false;
    ok.addEventListener("click", () => {
      result = true;
      dlg.close("ok");
    });
    cancel.addEventListener("click", () => dlg.close("cancel"));
    dlg.addEventListener("click", (ev) => {
      if (ev.target === dlg) dlg.close("cancel");
    });
    dlg.addEventListener("close", () => {
      dlg.remove();
      resolve(result);
    });
    document.body.append(dlg);
    dlg.showModal();
    cancel.focus();
  });
}

// ---- shell -------------------------------------------------------------------------------------

/** The API-key dialog. `ask(reason)` opens it and resolves to the saved key, or null. */
function apiKeyDialog(button) {
  const input = h("input", {
    type: "password",
    id: "api-key-input",
    autocomplete: "off",
    "data-testid": "api-key-input",
  });
  const reasonText = h("p", { class: "field-error", role: "alert", "data-testid": "api-key-reason", hidden: true });
  const dlg = h(
    "dialog",
    { "aria-labelledby": "api-key-title", "data-testid": "api-key-dialog" },
    h(
      "form",
      { method: "dialog" },
      h("div", { class: "dialog-head" }, h("h2", { id: "api-key-title" }, "API Key"),
        h("button", { type: "button", "data-close": "", "aria-label": "关闭" }, icon("x"))),
      h(
        "div",
        { class: "dialog-body" },
        reasonText,
        h("div", { class: "field" },
          h("label", { for: "api-key-input" }, "X-API-Key"),
          input,
          h("span", { class: "hint" }, "服务端设置了 API_KEY 时，每个请求都需要它；只保存在当前标签页 (sessionStorage)，关闭标签页即清除。")),
      ),
      h(
        "div",
        { class: "dialog-foot" },
        h("button", {
          type: "button",
          "data-testid": "api-key-clear",
          onclick: () => {
            setApiKey("");
            input.value = "";
            dlg.close("clear");
          },
        }, "清除"),
        h("button", { type: "submit", class: "primary", value: "save", "data-testid": "api-key-save" }, "保存"),
      ),
    ),
  );
  const updateLabel = () => {
    setChildren(button, "API Key", getApiKey() ? icon("check", { label: "已保存 saved" }) : null);
  };
  let resolveAsk = null;
  dlg.addEventListener("close", () => {
    const saved = dlg.returnValue === "save" ? input.value.trim() : "";
    if (saved) setApiKey(saved);
    updateLabel();
    resolveAsk?.(saved || null);
    resolveAsk = null;
  });
  wireDialog(dlg);
  document.body.append(dlg);
  updateLabel();
  const ask = (reason) =>
    new Promise((resolve) => {
      resolveAsk = resolve;
      reasonText.textContent = reason || "";
      reasonText.hidden = !reason;
      input.value = getApiKey();
      dlg.returnValue = "";
      openDialog(dlg);
    });
  return ask;
}

async function showHealth(dot, text) {
  try {
    const hz = await api("/healthz");
    const ok = hz.status === "ok" || hz.status === "importing"; // importing: serving
    dot.className = `health-dot ${ok ? "ok" : "bad"}`;
    const model = pick(hz, "chatModel");
    const docs = hz.documents;
    text.textContent = [hz.status, model, docs !== undefined ? `${docs} docs` : null]
      .filter(Boolean)
      .join(" · ");
    const problems = (hz.problems ?? []).join("\n");
    dot.title = `database: ${hz.database?.kind ?? "?"} ${hz.database?.ok === false ? "down" : "ok"}; vector store: ${pick(hz, "vectorStore")?.kind ?? "?"}${problems ? `\n${problems}` : ""}`;
  } catch (err) {
    dot.className = "health-dot bad";
    text.textContent = "server unreachable";
  }
}

let healthNodes = null;

/** Reads /healthz again (e.g. the document count after an upload). */
export function refreshHealth() {
  return healthNodes ? showHealth(...healthNodes) : Promise.resolve();
}

/** Adds the health indicator and the API-key button to the page's top nav. */
export function initShell() {
  fillIcons(); // static buttons marked data-icon="…" get their SVG
  const tools = document.querySelector(".topnav .nav-tools");
  if (!tools) return;
  const dot = h("span", { class: "health-dot", "aria-hidden": "true" });
  const text = h("span", { class: "health-text", "data-testid": "health" }, "…");
  const keyBtn = h("button", { type: "button", class: "small", "data-testid": "api-key-button" }, "API Key");
  const ask = apiKeyDialog(keyBtn);
  keyBtn.addEventListener("click", () => ask(""));
  setKeyPrompt((reason) => ask(reason));
  tools.append(h("span", { class: "nowrap", title: "GET /healthz" }, dot, " ", text), keyBtn);
  healthNodes = [dot, text];
  showHealth(dot, text);
  watchStartup(() => showHealth(dot, text)); // a banner while the server starts or first imports
}

export function debounce(fn, ms = 300) {
  let t;
  return (...args) => {
    clearTimeout(t);
    t = setTimeout(() => fn(...args), ms);
  };
}

export function pager({ page, pageSize, total, onPage, testid = "pager" }) {
  const pages = Math.max(1, Math.ceil((total || 0) / (pageSize || 20)));
  return h(
    "nav",
    { class: "pager", "aria-label": "分页", "data-testid": testid },
    h("span", { class: "muted small-text", "data-testid": `${testid}-info` }, `共 ${total ?? 0} 条 · 第 ${page} / ${pages} 页`),
    h("button", { type: "button", class: "small", disabled: page <= 1, onclick: () => onPage(page - 1), "aria-label": "上一页" }, "‹ 上一页"),
    h("button", { type: "button", class: "small", disabled: page >= pages, onclick: () => onPage(page + 1), "aria-label": "下一页" }, "下一页 ›"),
  );
}
