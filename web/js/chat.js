// Chat page: conversations (ids kept in localStorage), streamed answers over SSE, per-message
// feedback and a live trace drawer.

import { ApiError, api, describeError, streamSSE } from "./api.js";
import { hintsFromTrace, linkCitations } from "./citations.js";
import { fillIcons, icon } from "./icons.js";
import { ledgerFrom, linkLedger, withoutLedgerBlock } from "./ledger.js";
import { setMarkdown } from "./markdown.js";
import { clear, errorBox, fmtDuration, h, initShell, levelBadge, pick, setChildren } from "./ui.js";

const LS_CONVS = "sb.conversations";
const LS_CURRENT = "sb.currentConversation";
const LS_MSGS = (id) => `sb.messages.${id}`;
const MAX_MESSAGES = 60;
const MAX_TRACE = 300;

const els = {
  list: document.getElementById("conversation-list"),
  messages: document.getElementById("messages"),
  form: document.getElementById("chat-form"),
  input: document.getElementById("chat-input"),
  send: document.getElementById("chat-send"),
  stop: document.getElementById("chat-stop"),
  aiops: document.getElementById("aiops-button"),
  newConv: document.getElementById("new-conversation"),
  composerError: document.getElementById("composer-error"),
};

let controller = null; // AbortController of the running stream

// ---- storage ------------------------------------------------------------------------------------

function load(key, fallback) {
  try {
    const raw = localStorage.getItem(key);
    return raw ? JSON.parse(raw) : fallback;
  } catch {
    return fallback;
  }
}

function save(key, value) {
  try {
    localStorage.setItem(key, JSON.stringify(value));
  } catch (err) {
    console.warn("localStorage is full or unavailable", err);
  }
}

function newId() {
  const bytes = new Uint8Array(16);
  crypto.getRandomValues(bytes);
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

const store = {
  conversations: () => load(LS_CONVS, []),
  setConversations: (list) => save(LS_CONVS, list),
  current: () => localStorage.getItem(LS_CURRENT),
  setCurrent: (id) => localStorage.setItem(LS_CURRENT, id),
  messages: (id) => load(LS_MSGS(id), []),
  setMessages: (id, msgs) => save(LS_MSGS(id), msgs.slice(-MAX_MESSAGES)),
};

function createConversation(title = "新对话") {
  const conv = { id: newId(), title, updatedAt: new Date().toISOString() };
  store.setConversations([conv, ...store.conversations()]);
  store.setCurrent(conv.id);
  return conv;
}

function currentConversation() {
  const convs = store.conversations();
  const id = store.current();
  return convs.find((c) => c.id === id) || convs[0] || createConversation();
}

function touchConversation(id, title) {
  const convs = store.conversations();
  const conv = convs.find((c) => c.id === id);
  if (!conv) return;
  conv.updatedAt = new Date().toISOString();
  if (title && (conv.title === "新对话" || !conv.title)) conv.title = title.slice(0, 40);
  store.setConversations([conv, ...convs.filter((c) => c.id !== id)]);
}

// ---- conversation list --------------------------------------------------------------------------

function renderConversations() {
  const current = currentConversation();
  clear(els.list);
  for (const conv of store.conversations()) {
    const active = conv.id === current.id;
    els.list.append(
      h(
        "li",
        { class: "conv-item", "data-testid": "conversation-item", "data-conversation-id": conv.id },
        h(
          "button",
          {
            type: "button",
            class: "conv-open",
            "aria-current": active ? "true" : "false",
            title: conv.title,
            onclick: () => switchTo(conv.id),
          },
          h("span", {}, conv.title || "新对话"),
        ),
        h(
          "button",
          {
            type: "button",
            class: "small",
            "aria-label": `从列表移除对话「${conv.title}」`,
            title: "从列表移除（只删除本浏览器里的记录）",
            onclick: () => removeConversation(conv.id),
          },
          icon("x"),
        ),
      ),
    );
  }
}

function switchTo(id) {
  if (controller) return;
  store.setCurrent(id);
  renderConversations();
  renderMessages();
  els.input.focus();
}

function removeConversation(id) {
  if (controller && id === store.current()) return;
  store.setConversations(store.conversations().filter((c) => c.id !== id));
  localStorage.removeItem(LS_MSGS(id));
  if (store.current() === id) {
    const rest = store.conversations();
    if (rest.length) store.setCurrent(rest[0].id);
    else createConversation();
  }
  renderConversations();
  renderMessages();
}

// ---- messages -----------------------------------------------------------------------------------

function emptyChat() {
  const example = (q) =>
    h("button", { type: "button", class: "small", "data-testid": "example-question", onclick: () => {
      els.input.value = q;
      els.input.focus();
    } }, q);
  return h(
    "div",
    { class: "empty", "data-testid": "empty-state" },
    h("p", {}, "还没有消息：在下方输入问题后按 Enter 发送，或点击「AI-Ops 告警分析」分析当前告警。"),
    h("div", { class: "examples", style: { justifyContent: "center" } },
      example("ERR_TIMEOUT 是什么意思？"),
      example("MySQL 连接池耗尽怎么排查？"),
      example("Redis 内存告警如何处理？")),
  );
}

function renderMessages() {
  const conv = currentConversation();
  const msgs = store.messages(conv.id);
  clear(els.messages);
  if (!msgs.length) {
    els.messages.append(emptyChat());
    return;
  }
  for (const m of msgs) els.messages.append(m.role === "user" ? userView(m) : new AssistantView(m).el);
}

function userView(m) {
  return h("div", { class: "msg user", "data-testid": "message-user" }, m.text);
}

// Empty ({} or []) reads as nothing, so the caller can hide the line instead of printing a bare label.
function fmtDomains(domains) {
  if (!domains) return "";
  if (Array.isArray(domains)) return domains.join(", ");
  if (typeof domains === "object")
    return Object.entries(domains)
      .map(([d, paths]) => `${d}${Array.isArray(paths) && paths.length ? ` (${paths.join(", ")})` : ""}`)
      .join("; ");
  return String(domains);
}

function stepMs(ev) {
  const ms = pick(ev, "durationMs");
  return h("span", { class: "step-ms", "data-testid": "step-duration", title: "耗时 duration" },
    ms === undefined || ms === null ? "" : fmtDuration(ms));
}

/** Append one event to a trace list; a node_end fills in the duration of its node's line. */
function addTraceEvent(list, ev) {
  if (ev.type === "node_end") {
    const line = ev.task_id ? list.querySelector(`li[data-task-id="${CSS.escape(ev.task_id)}"] .step-ms`) : null;
    if (line) line.textContent = fmtDuration(pick(ev, "durationMs"));
    return;
  }
  list.append(traceItem(ev));
}

function traceItem(ev) {
  const kind = h("span", { class: "ev-kind" }, ev.type);
  if (ev.type === "node")
    return h("li", { "data-testid": "trace-event", "data-kind": "node", "data-task-id": ev.task_id || null },
      kind, icon("play"), " ", h("b", {}, ev.node), stepMs({}));
  if (ev.type === "tool_call") {
    let args = "";
    try {
      args = JSON.stringify(ev.args ?? {});
    } catch {
      args = String(ev.args);
    }
    return h("li", { "data-testid": "trace-event", "data-kind": "tool_call" }, kind,
      h("b", {}, ev.tool), ev.node ? ` @${ev.node} ` : " ", h("code", {}, args.length > 300 ? `${args.slice(0, 300)}…` : args));
  }
  if (ev.type === "tool_result") {
    const level = pick(ev, "relevanceLevel");
    const domains = pick(ev, "retrievedDomainsThisSession");
    return h("li", { "data-testid": "trace-event", "data-kind": "tool_result" }, kind,
      h("b", {}, ev.tool), " ",
      h("span", { class: `badge ${ev.status === "error" ? "status-error" : "neutral"}` }, ev.status || "ok"), " ",
      level ? levelBadge(level) : null,
      ev.source ? [" source: ", h("code", { "data-testid": "trace-source" }, ev.source)] : null,
      stepMs(ev),
      domains && fmtDomains(domains) ? h("div", { class: "muted", "data-testid": "trace-domains" }, `retrievedDomainsThisSession: ${fmtDomains(domains)}`) : null,
      ev.message ? h("div", { class: "muted" }, ev.message) : null);
  }
  return h("li", { "data-testid": "trace-event" }, kind, JSON.stringify(ev));
}

let viewCounter = 0;

/** One assistant message: streamed text, final Markdown, feedback and the trace drawer. */
class AssistantView {
  constructor(msg) {
    this.msg = msg;
    const n = ++viewCounter;
    this.body = h("div", { class: "msg-body", "data-testid": "answer" });
    this.head = h("div", { class: "msg-head" });
    this.errorSlot = h("div");
    this.traceList = h("ol", { "data-testid": "trace-list" });
    this.traceCount = h("span", {}, "");
    this.traceDomains = h("div", { class: "muted small-text", "data-testid": "trace-session-domains", hidden: true });
    this.sessionLink = h("a", { "data-testid": "session-link", hidden: true }, "在 Sessions 页查看完整记录 →");
    this.drawer = h("div", { class: "trace", id: `trace-${n}`, hidden: true, "data-testid": "trace-drawer" },
      h("div", { class: "muted small-text" }, "Trace：node / tool_call / tool_result 事件（实时）"),
      this.traceList, this.traceDomains, this.sessionLink);
    this.traceBtn = h("button", {
      type: "button", class: "small", "aria-expanded": "false", "aria-controls": `trace-${n}`,
      "data-testid": "trace-toggle", onclick: () => this.toggleTrace(),
    }, "Trace ", this.traceCount);
    this.useful = h("button", { type: "button", class: "small", "data-testid": "feedback-useful",
      onclick: () => this.feedback("useful") }, icon("thumbs-up"), "有用 useful");
    this.notUseful = h("button", { type: "button", class: "small", "data-testid": "feedback-not-useful",
      onclick: () => this.feedback("not_useful") }, icon("thumbs-down"), "没用 not useful");
    this.fbStatus = h("span", { class: "fb-status muted", role: "status", "data-testid": "feedback-status" });
    this.el = h("article", { class: "msg assistant", "data-testid": "message-assistant", "aria-label": "回答" },
      this.head, this.body, this.errorSlot,
      h("div", { class: "msg-actions" }, this.useful, this.notUseful, this.fbStatus,
        h("span", { style: { flex: "1" } }), this.traceBtn),
      this.drawer);
    for (const ev of msg.trace || []) addTraceEvent(this.traceList, ev);
    this.render();
  }

  render() {
    const m = this.msg;
    this.el.dataset.status = m.status || "";
    if (m.sessionId) this.el.dataset.sessionId = m.sessionId;
    setChildren(
      this.head,
      h("span", {}, m.kind === "aiops" ? "AI-Ops 报告" : "SuperBiz Agent"),
      m.flow ? h("span", { class: "badge neutral" }, m.flow) : null,
      m.status === "streaming" ? h("span", { class: "badge status-RUNNING", "data-testid": "message-streaming" }, "生成中…") : null,
      m.status === "stopped" ? h("span", { class: "badge status-PENDING" }, "已停止") : null,
      m.sessionId ? h("span", { class: "mono", title: "sessionId" }, m.sessionId.slice(0, 12)) : null,
    );
    if (m.status === "streaming" && !m.final) {
      clear(this.body);
      this.body.className = "msg-body streaming";
      this.body.textContent = m.text || (m.trace?.length ? "" : "思考中…");
    } else {
      this.body.className = "msg-body";
      const text = m.final ?? m.text ?? "";
      setMarkdown(this.body, withoutLedgerBlock(text));
      linkCitations(this.body, hintsFromTrace(m.trace));
      linkLedger(this.body, ledgerFrom(text));
    }
    clear(this.errorSlot);
    if (m.error) this.errorSlot.append(errorBox(m.error, "message-error"));
    if (m.sessionId) {
      this.sessionLink.href = `/sessions#${encodeURIComponent(m.sessionId)}`;
      this.sessionLink.hidden = false;
    }
    this.traceCount.textContent = `(${this.traceList.children.length})`;
    const domains = [...(m.trace || [])].reverse().map((e) => pick(e, "retrievedDomainsThisSession")).find((d) => d);
    this.showDomains(domains);
    const canRate = Boolean(m.sessionId) && m.status !== "streaming" && !m.feedback;
    this.useful.disabled = !canRate;
    this.notUseful.disabled = !canRate;
    this.useful.setAttribute("aria-pressed", String(m.feedback === "useful"));
    this.notUseful.setAttribute("aria-pressed", String(m.feedback === "not_useful"));
    if (m.feedback && !this.fbStatus.textContent) {
      this.fbStatus.textContent = `已记录反馈：${m.feedback}`;
    }
  }

  toggleTrace(force) {
    const open = force ?? this.drawer.hidden;
    this.drawer.hidden = !open;
    this.traceBtn.setAttribute("aria-expanded", String(open));
  }

  addTrace(ev) {
    addTraceEvent(this.traceList, ev);
    this.traceCount.textContent = `(${this.traceList.children.length})`;
    const domains = pick(ev, "retrievedDomainsThisSession");
    if (domains) this.showDomains(domains);
  }

  showDomains(domains) {
    const text = fmtDomains(domains);
    this.traceDomains.textContent = text ? `retrievedDomainsThisSession: ${text}` : "";
    this.traceDomains.hidden = !text;
  }

  async feedback(value) {
    const sessionId = this.msg.sessionId;
    if (!sessionId) return;
    this.useful.disabled = true;
    this.notUseful.disabled = true;
    this.fbStatus.className = "fb-status muted";
    this.fbStatus.textContent = "提交中…";
    try {
      const res = await api("/api/feedback", { method: "POST", json: { sessionId, feedback: value } });
      this.msg.feedback = value;
      persistMessage(this.msg);
      const caseId = pick(res, "caseId");
      this.fbStatus.className = "fb-status";
      this.fbStatus.style.color = "var(--ok)";
      setChildren(this.fbStatus, icon("check"), ` ${res?.message || "反馈已记录"}（${value}${caseId ? ` · case ${caseId}` : ""}）`);
      this.render();
    } catch (err) {
      this.fbStatus.className = "fb-status field-error";
      this.fbStatus.textContent = `反馈失败：${describeError(err)}`;
      this.useful.disabled = false;
      this.notUseful.disabled = false;
    }
  }
}

// Message objects are persisted per conversation; `persistMessage` rewrites the one with `localId`.
function persistMessage(msg) {
  const convId = msg.conversationId;
  const msgs = store.messages(convId);
  const idx = msgs.findIndex((m) => m.localId === msg.localId);
  const copy = { ...msg, trace: (msg.trace || []).slice(-MAX_TRACE) };
  if (idx === -1) msgs.push(copy);
  else msgs[idx] = copy;
  store.setMessages(convId, msgs);
}

// ---- running a question -------------------------------------------------------------------------

function setBusy(busy) {
  els.send.disabled = busy;
  els.aiops.disabled = busy;
  els.newConv.disabled = busy;
  els.stop.hidden = !busy;
  els.form.setAttribute("aria-busy", String(busy));
}

function nearBottom() {
  return window.innerHeight + window.scrollY >= document.body.scrollHeight - 160;
}

function scrollDown(force = false) {
  if (force || nearBottom()) window.scrollTo({ top: document.body.scrollHeight });
}

async function run(kind, question) {
  if (controller) return;
  els.composerError.hidden = true;
  const conv = currentConversation();
  const title = kind === "aiops" ? "AI-Ops 告警分析" : question;
  touchConversation(conv.id, title);
  renderConversations();
  if (els.messages.querySelector('[data-testid="empty-state"]')) clear(els.messages);

  const userMsg = { localId: newId(), conversationId: conv.id, role: "user", kind, text: title, createdAt: new Date().toISOString() };
  persistMessage(userMsg);
  els.messages.append(userView(userMsg));
  const msg = {
    localId: newId(), conversationId: conv.id, role: "assistant", kind, text: "", final: null,
    status: "streaming", trace: [], createdAt: new Date().toISOString(),
  };
  const view = new AssistantView(msg);
  els.messages.append(view.el);
  scrollDown(true);
  persistMessage(msg);

  controller = new AbortController();
  setBusy(true);
  let finished = false;
  const onEvent = (type, data) => {
    const d = data && typeof data === "object" ? data : { text: String(data ?? "") };
    switch (type) {
      case "session":
        msg.sessionId = pick(d, "sessionId");
        msg.threadId = pick(d, "threadId");
        msg.flow = d.flow;
        persistMessage(msg);
        view.render();
        break;
      case "node":
      case "node_end":
      case "tool_call":
      case "tool_result": {
        const ev = { type, ...d };
        msg.trace.push(ev);
        view.addTrace(ev);
        if (msg.status === "streaming" && !msg.text && !msg.final) view.body.textContent = "";
        break;
      }
      case "token":
        msg.text += d.text ?? "";
        if (!msg.final) {
          view.body.className = "msg-body streaming";
          view.body.textContent = msg.text;
        }
        scrollDown();
        break;
      case "answer":
        msg.final = d.text ?? "";
        view.render();
        scrollDown();
        break;
      case "done":
        finished = true;
        msg.sessionId = pick(d, "sessionId") || msg.sessionId;
        msg.final = d.answer ?? msg.final ?? msg.text;
        msg.status = "done";
        persistMessage(msg);
        view.render();
        scrollDown();
        break;
      case "error":
        finished = true;
        msg.sessionId = pick(d, "sessionId") || msg.sessionId;
        msg.error = `运行失败：${d.error || d.message || "unknown error"}`;
        msg.status = "error";
        if (!msg.final && !msg.text) msg.final = "";
        persistMessage(msg);
        view.render();
        break;
      default:
        break;
    }
  };
  try {
    const body = kind === "aiops" ? { id: conv.id } : { id: conv.id, question };
    await streamSSE(kind === "aiops" ? "/api/ai_ops" : "/api/chat_stream", body, {
      onEvent,
      signal: controller.signal,
    });
    if (!finished) {
      msg.status = "error";
      msg.error = "连接在回答完成前结束了（没有收到 done 事件）。请重试。";
    }
  } catch (err) {
    if (err && err.name === "AbortError") {
      msg.status = "stopped";
    } else {
      msg.status = "error";
      msg.error = err instanceof ApiError ? `请求失败：${err.describe()}` : `请求失败：${describeError(err)}`;
    }
  } finally {
    if (msg.status === "streaming") msg.status = "done";
    persistMessage(msg);
    view.render();
    controller = null;
    setBusy(false);
    els.input.focus();
  }
}

// ---- wiring -------------------------------------------------------------------------------------

els.form.addEventListener("submit", (ev) => {
  ev.preventDefault();
  const q = els.input.value.trim();
  if (!q) {
    els.composerError.textContent = "请输入问题。";
    els.composerError.hidden = false;
    els.input.focus();
    return;
  }
  els.input.value = "";
  run("chat", q);
});

els.input.addEventListener("keydown", (ev) => {
  // Enter sends, Shift+Enter is a newline; never send while an IME is composing (Chinese input).
  if (ev.key === "Enter" && !ev.shiftKey && !ev.isComposing && ev.keyCode !== 229) {
    ev.preventDefault();
    if (!controller) els.form.requestSubmit();
  }
});

els.stop.addEventListener("click", () => controller?.abort());
els.aiops.addEventListener("click", () => run("aiops", null));
els.newConv.addEventListener("click", () => {
  if (controller) return;
  const cur = currentConversation();
  // Reuse an untouched conversation instead of piling up empty ones.
  if (!store.messages(cur.id).length && cur.title === "新对话") {
    els.input.focus();
    return;
  }
  createConversation();
  renderConversations();
  renderMessages();
  els.input.focus();
});

fillIcons();
initShell();
renderConversations();
renderMessages();
