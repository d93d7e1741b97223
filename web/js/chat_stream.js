// Chat page, one run: the answer streamed over SSE (/api/chat_stream or /api/ai_ops) into its
// message, the composer busy meanwhile, Stop aborting it, the page following the text as it grows.

import { ApiError, describeError, streamSSE } from "./api.js";
import { AssistantView } from "./chat_message.js";
import { newId, persistMessage } from "./chat_store.js";
import { pick } from "./ui.js";

const $ = (id) => document.getElementById(id);
const els = {
  form: $("chat-form"),
  input: $("chat-input"),
  send: $("chat-send"),
  stop: $("chat-stop"),
  aiops: $("aiops-button"),
  newConv: $("new-conversation"),
};

let controller = null; // AbortController of the running stream

export function running() {
  return controller !== null;
}

export function stopRun() {
  controller?.abort();
}

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

/** Streams the answer to `question` (none for AI-Ops) in conversation `conv` into `messages`. */
export async function streamAnswer(conv, kind, question, messages) {
  const msg = {
    localId: newId(), conversationId: conv.id, role: "assistant", kind, text: "", final: null,
    status: "streaming", trace: [], createdAt: new Date().toISOString(),
  };
  const view = new AssistantView(msg);
  messages.append(view.el);
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
