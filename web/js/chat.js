// Chat page: the conversation list and the messages of the current one, the composer. What the
// browser keeps is in chat_store.js, a message's view in chat_message.js (its trace drawer in
// chat_trace.js), a run's stream in chat_stream.js.

import {
  createConversation, currentConversation, newId, persistMessage, store, touchConversation,
} from "./chat_store.js";
import { AssistantView, userView } from "./chat_message.js";
import { running, stopRun, streamAnswer } from "./chat_stream.js";
import { fillIcons, icon } from "./icons.js";
import { clear, h, initShell } from "./ui.js";

const els = {
  list: document.getElementById("conversation-list"),
  messages: document.getElementById("messages"),
  form: document.getElementById("chat-form"),
  input: document.getElementById("chat-input"),
  aiops: document.getElementById("aiops-button"),
  stop: document.getElementById("chat-stop"),
  newConv: document.getElementById("new-conversation"),
  composerError: document.getElementById("composer-error"),
};

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
  if (running()) return;
  store.setCurrent(id);
  renderConversations();
  renderMessages();
  els.input.focus();
}

function removeConversation(id) {
  if (running() && id === store.current()) return;
  store.setConversations(store.conversations().filter((c) => c.id !== id));
  store.removeMessages(id);
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

// ---- running a question -------------------------------------------------------------------------

async function run(kind, question) {
  if (running()) return;
  els.composerError.hidden = true;
  const conv = currentConversation();
  const title = kind === "aiops" ? "AI-Ops 告警分析" : question;
  touchConversation(conv.id, title);
  renderConversations();
  if (els.messages.querySelector('[data-testid="empty-state"]')) clear(els.messages);

  const userMsg = { localId: newId(), conversationId: conv.id, role: "user", kind, text: title, createdAt: new Date().toISOString() };
  persistMessage(userMsg);
  els.messages.append(userView(userMsg));
  await streamAnswer(conv, kind, question, els.messages);
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
    if (!running()) els.form.requestSubmit();
  }
});

els.stop.addEventListener("click", stopRun);
els.aiops.addEventListener("click", () => run("aiops", null));
els.newConv.addEventListener("click", () => {
  if (running()) return;
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
