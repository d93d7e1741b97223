// Chat page, one message as shown: the question, or the answer (streamed text, then Markdown
// with linked citations and evidence ledger), its feedback buttons and its trace drawer.

import { api, describeError } from "./api.js";
import { persistMessage } from "./chat_store.js";
import { TraceDrawer } from "./chat_trace.js";
import { hintsFromTrace, linkCitations } from "./citations.js";
import { icon } from "./icons.js";
import { ledgerFrom, linkLedger, withoutLedgerBlock } from "./ledger.js";
import { setMarkdown } from "./markdown.js";
import { clear, errorBox, h, pick, setChildren } from "./ui.js";

export function userView(m) {
  return h("div", { class: "msg user", "data-testid": "message-user" }, m.text);
}

/** One assistant message: streamed text, final Markdown, feedback and the trace drawer. */
export class AssistantView {
  constructor(msg) {
    this.msg = msg;
    this.body = h("div", { class: "msg-body", "data-testid": "answer" });
    this.head = h("div", { class: "msg-head" });
    this.errorSlot = h("div");
    this.trace = new TraceDrawer(msg.trace || []);
    this.useful = h("button", { type: "button", class: "small", "data-testid": "feedback-useful",
      onclick: () => this.feedback("useful") }, icon("thumbs-up"), "有用 useful");
    this.notUseful = h("button", { type: "button", class: "small", "data-testid": "feedback-not-useful",
      onclick: () => this.feedback("not_useful") }, icon("thumbs-down"), "没用 not useful");
    this.fbStatus = h("span", { class: "fb-status muted", role: "status", "data-testid": "feedback-status" });
    this.el = h("article", { class: "msg assistant", "data-testid": "message-assistant", "aria-label": "回答" },
      this.head, this.body, this.errorSlot,
      h("div", { class: "msg-actions" }, this.useful, this.notUseful, this.fbStatus,
        h("span", { style: { flex: "1" } }), this.trace.button),
      this.trace.el);
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
    this.trace.render(m.sessionId, m.trace || []);
    const canRate = Boolean(m.sessionId) && m.status !== "streaming" && !m.feedback;
    this.useful.disabled = !canRate;
    this.notUseful.disabled = !canRate;
    this.useful.setAttribute("aria-pressed", String(m.feedback === "useful"));
    this.notUseful.setAttribute("aria-pressed", String(m.feedback === "not_useful"));
    if (m.feedback && !this.fbStatus.textContent) {
      this.fbStatus.textContent = `已记录反馈：${m.feedback}`;
    }
  }

  addTrace(ev) {
    this.trace.add(ev);
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
