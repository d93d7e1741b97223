// Sessions page: recorded diagnosis sessions, their full trace, replay with a divergence report,
// and time travel from any checkpoint. A session opens from the list or from the URL hash.

import { api, describeError } from "./api.js";
import { hintsFromInvocations, linkCitations } from "./citations.js";
import { icon } from "./icons.js";
import { ledgerFrom, linkLedger, withoutLedgerBlock } from "./ledger.js";
import { setMarkdown } from "./markdown.js";
import {
  clear, debounce, emptyState, errorBox, fmtDate, fmtDuration, h, initShell, json, jsonDetails, levelBadge,
  loadingState, pager, pick, setChildren, statusBadge,
} from "./ui.js";

const $ = (id) => document.getElementById(id);
const els = {
  table: $("session-table"),
  pager: $("session-pager"),
  status: $("session-status"),
  flow: $("session-flow"),
  origin: $("session-origin"),
  pageSize: $("session-page-size"),
  q: $("session-q"),
  from: $("session-from"),
  to: $("session-to"),
  detail: $("session-detail"),
};
const state = { status: "", flow: "", origin: "", q: "", from: "", to: "", page: 1, pageSize: 20, items: [] };
let listToken = 0;
let detailToken = 0;

function currentId() {
  return decodeURIComponent(location.hash.replace(/^#/, "")).trim();
}

function feedbackBadge(fb) {
  if (!fb) return h("span", { class: "muted" }, "—");
  return h("span", { class: `badge fb-${fb}`, "data-testid": "feedback-badge" }, fb);
}

// Replays and eval runs are recorded like user runs but are not traffic: shown apart.
function originBadge(origin) {
  const o = origin || "user";
  return h("span", { class: `badge origin-${o}${o === "user" ? "" : " muted"}` }, o);
}

function scoreText(v) {
  if (v === null || v === undefined) return "—";
  if (typeof v === "object") return String(pick(v, "evidenceScore") ?? "—");
  return String(v);
}

// ---- list ---------------------------------------------------------------------------------------

async function loadSessions({ quiet = false } = {}) {
  const token = ++listToken;
  if (!quiet && !state.items.length) setChildren(els.table, loadingState("正在加载会话…"));
  let data;
  try {
    data = await api("/api/sessions", {
      query: {
        status: state.status, flow: state.flow, origin: state.origin, q: state.q, from: dayStart(state.from), to: dayEnd(state.to),
        page: state.page, pageSize: state.pageSize,
      },
    });
  } catch (err) {
    if (token === listToken) setChildren(els.table, errorBox(`会话列表加载失败：${describeError(err)}`, "session-table-error"));
    return;
  }
  if (token !== listToken) return;
  state.items = data.items || [];
  renderTable(data.total ?? state.items.length);
}

// The date inputs hold the operator's local days; the API compares instants (UTC).
function dayStart(day) {
  return day ? new Date(`${day}T00:00:00`).toISOString() : "";
}

function dayEnd(day) {
  return day ? new Date(`${day}T23:59:59.999`).toISOString() : "";
}

function filtered() {
  return Boolean(state.status || state.flow || state.origin || state.q || state.from || state.to);
}

function renderTable(total) {
  if (!state.items.length) {
    setChildren(
      els.table,
      filtered()
        ? emptyState("没有符合条件的会话：换个搜索词，或放宽日期、状态、流程筛选。")
        : emptyState("还没有会话记录：到「对话」页提问或运行「AI-Ops 告警分析」，每次运行都会记录在这里。",
          h("a", { class: "button primary", href: "/" }, "去提问")),
    );
    clear(els.pager);
    return;
  }
  const head = ["问题 Query", "状态", "Flow", "来源 Origin", "耗时", "Tokens", "Evidence", "反馈", "创建时间"];
  const selected = currentId();
  const rows = state.items.map((s) => {
    const id = pick(s, "sessionId");
    return h(
      "tr",
      { "data-testid": "session-row", "data-session-id": id, class: id === selected ? "selected" : null },
      h("td", { "data-label": head[0] },
        h("a", { href: `#${encodeURIComponent(id)}`, "data-testid": "session-open" }, s.query || id),
        pick(s, "replayOf") ? h("div", { class: "muted small-text" }, `replay of ${pick(s, "replayOf").slice(0, 12)}`) : null),
      h("td", { "data-label": head[1] }, statusBadge(s.status, "session-status")),
      h("td", { "data-label": head[2] }, pick(s, "agentFlow") || "—"),
      h("td", { "data-label": head[3], "data-testid": "session-origin" }, originBadge(s.origin)),
      h("td", { "data-label": head[4], class: "num" }, fmtDuration(pick(s, "totalDurationMs"))),
      h("td", { "data-label": head[5], class: "num" }, String(pick(s, "totalTokens") ?? "—")),
      h("td", { "data-label": head[6], class: "num", "data-testid": "session-evidence" }, scoreText(pick(s, "evidenceScore"))),
      h("td", { "data-label": head[7] }, feedbackBadge(s.feedback)),
      h("td", { "data-label": head[8], class: "nowrap" }, fmtDate(pick(s, "createdAt"))),
    );
  });
  setChildren(
    els.table,
    h("table", { class: "data stack" },
      h("thead", {}, h("tr", {}, head.map((t, i) => h("th", { scope: "col", class: i >= 3 && i <= 5 ? "num" : null }, t)))),
      h("tbody", {}, rows)),
  );
  setChildren(els.pager, pager({
    page: state.page, pageSize: state.pageSize, total, testid: "session-pager",
    onPage: (p) => {
      state.page = p;
      loadSessions();
    },
  }));
}

// ---- detail -------------------------------------------------------------------------------------

function cell(label, value, testid) {
  return h("div", { class: "cell" }, h("span", { class: "k" }, label),
    h("span", testid ? { "data-testid": testid } : {}, value instanceof Node ? value : String(value ?? "—")));
}

function stepView(st) {
  const output = pick(st, "modelOutput");
  const input = pick(st, "modelInput");
  return h(
    "div",
    { class: "step", "data-testid": "session-step" },
    h("div", { class: "step-head" },
      h("strong", {}, `#${pick(st, "stepIndex")}`),
      h("span", { class: "badge neutral", "data-testid": "step-agent" }, pick(st, "agentName") || "?"),
      h("span", { class: "muted" }, fmtDuration(pick(st, "durationMs"))),
      h("span", { class: "muted" }, `${pick(st, "tokenCount") ?? 0} tokens`),
      pick(st, "hasToolCall") ? h("span", { class: "badge neutral" }, "tool call") : null,
      h("span", { class: "muted small-text" }, fmtDate(pick(st, "createdAt")))),
    st.thought ? h("p", { class: "small-text" }, h("strong", {}, "Thought: "), st.thought) : null,
    output ? h("div", { class: "small-text" }, h("strong", {}, "Output: "),
      h("pre", { class: "content-block" }, typeof output === "string" ? output : json(output))) : null,
    input ? jsonDetails("Model input", input) : null,
  );
}

function invocationView(inv) {
  const ok = pick(inv, "success") !== false;
  const details = pick(inv, "retrievalDetails");
  const level = pick(inv, "relevanceLevel");
  return h(
    "div",
    { class: "inv", "data-testid": "session-invocation", "data-call-key": pick(inv, "callKey") || "" },
    h("div", { class: "inv-head" },
      h("strong", { "data-testid": "invocation-tool" }, pick(inv, "toolName")),
      pick(inv, "retrievalLayer") ? h("span", { class: "badge neutral", title: "retrieval layer" }, pick(inv, "retrievalLayer")) : null,
      level ? levelBadge(level) : null,
      h("span", { class: `badge ${ok ? "status-SUCCESS" : "status-FAILED"}` }, ok ? "success" : "failed"),
      h("span", { class: "muted" }, fmtDuration(pick(inv, "durationMs")))),
    h("div", { class: "kv" },
      h("span", {}, "L0 ", h("b", {}, String(pick(inv, "l0MatchCount") ?? "—"))),
      h("span", {}, "L1 ", h("b", {}, String(pick(inv, "l1MatchCount") ?? "—"))),
      pick(inv, "dedupReason") ? h("span", { "data-testid": "invocation-dedup" }, "dedup ", h("b", {}, pick(inv, "dedupReason"))) : null,
      h("span", {}, "output ", h("b", {}, `${pick(inv, "outputLength") ?? "?"} chars`)),
      pick(inv, "isTruncated") ? h("span", {}, h("b", {}, "truncated")) : null,
      pick(inv, "stepId") !== undefined && pick(inv, "stepId") !== null ? h("span", {}, "step id ", h("b", {}, String(pick(inv, "stepId")))) : null),
    pick(inv, "errorMessage") ? errorBox(pick(inv, "errorMessage"), "invocation-error") : null,
    pick(inv, "inputParams") ? jsonDetails("Input params", pick(inv, "inputParams")) : null,
    pick(inv, "outputPreview") ? h("details", { open: true }, h("summary", {}, "Output preview"), h("pre", {}, pick(inv, "outputPreview"))) : null,
    details ? jsonDetails("Retrieval details (raw scores)", details, "retrieval-details") : null,
  );
}

function factorText(f) {
  if (typeof f === "string") return f;
  if (f && typeof f === "object" && "factor" in f) {
    const pts = Number(f.points);
    return `${f.factor}${Number.isFinite(pts) ? ` (${pts >= 0 ? "+" : ""}${pts})` : ""}`;
  }
  return json(f);
}

function divergenceText(d) {
  if (!d) return "";
  const parts = [];
  const step = pick(d, "step") ?? pick(d, "toolCall");
  if (step !== undefined) parts.push(`${pick(d, "toolCall") !== undefined && d.step === undefined ? "tool call" : "step"} ${step}`);
  if (d.kind) parts.push(`kind=${d.kind}`);
  if (d.agent) parts.push(`agent=${d.agent}`);
  if (d.tool) parts.push(`tool=${d.tool}`);
  return parts.join(" · ");
}

function replayReport(r) {
  const identical = Boolean(r.identical);
  const replayId = pick(r, "replaySessionId");
  const first = pick(r, "firstDivergence");
  const diffs = r.differences || [];
  return h(
    "div",
    { class: `report ${identical ? "identical" : "diverged"}`, "data-testid": "replay-report", "data-identical": String(identical) },
    identical
      ? h("p", {}, h("strong", {}, icon("check"), " identical"), " — 用记录的模型输出重跑当前代码，每一步都与原记录一致。")
      : h("p", {}, h("strong", {}, icon("x"), " diverged"), " — 第一个分歧：", h("code", { "data-testid": "first-divergence" }, divergenceText(first) || "unknown")),
    h("div", { class: "kv" },
      h("span", {}, "recorded steps ", h("b", {}, String(pick(r, "recordedSteps") ?? "—"))),
      h("span", {}, "replayed steps ", h("b", {}, String(pick(r, "replayedSteps") ?? "—"))),
      h("span", {}, "same answer ", h("b", {}, String(pick(r, "sameAnswer") ?? "—"))),
      h("span", {}, "status ", h("b", {}, String(r.status ?? "—")))),
    replayId ? h("p", {}, "Replay session: ", h("a", { href: `#${encodeURIComponent(replayId)}`, "data-testid": "replay-session-link" }, replayId)) : null,
    !identical && first ? jsonDetails("First divergence", first) : null,
    diffs.length > 1 ? jsonDetails(`All differences (${diffs.length})`, diffs) : null,
  );
}

async function replay(id, button, slot) {
  button.disabled = true;
  setChildren(slot, loadingState("正在重放（rerun：当前代码 + 记录的模型输出）…"));
  try {
    const report = await api(`/api/sessions/${encodeURIComponent(id)}/replay`, { method: "POST", json: { mode: "rerun" } });
    setChildren(slot, replayReport(report));
    loadSessions({ quiet: true });
  } catch (err) {
    setChildren(slot, errorBox(`重放失败：${describeError(err)}`, "replay-error"));
  } finally {
    button.disabled = false;
  }
}

async function rerunFrom(id, checkpointId, button, slot) {
  button.disabled = true;
  setChildren(slot, loadingState(`从 checkpoint ${checkpointId.slice(0, 12)}… 继续运行`));
  try {
    const r = await api(`/api/sessions/${encodeURIComponent(id)}/replay`, { method: "POST", json: { mode: "checkpoint", checkpointId } });
    const sid = pick(r, "sessionId");
    const answer = h("div");
    if (r.answer) setMarkdown(answer, r.answer);
    setChildren(slot, h("div", { class: "report identical", "data-testid": "checkpoint-result" },
      h("p", {}, icon("check"), " 已从 checkpoint 重新运行：", statusBadge(r.status), " ",
        sid ? h("a", { href: `#${encodeURIComponent(sid)}` }, `新会话 ${sid}`) : null),
      answer));
    loadSessions({ quiet: true });
  } catch (err) {
    setChildren(slot, errorBox(`重新运行失败：${describeError(err)}`, "checkpoint-error"));
  } finally {
    button.disabled = false;
  }
}

async function loadCheckpoints(id, container) {
  setChildren(container, loadingState("加载 checkpoints…"));
  let cps;
  try {
    cps = await api(`/api/sessions/${encodeURIComponent(id)}/checkpoints`);
  } catch (err) {
    setChildren(container, errorBox(`Checkpoints 加载失败：${describeError(err)}`, "checkpoints-error"));
    return;
  }
  const list = Array.isArray(cps) ? cps : cps?.items || [];
  if (!list.length) {
    setChildren(container, h("p", { class: "muted" }, "这个会话没有 checkpoint（可能是在没有 checkpointer 的情况下运行的）。"));
    return;
  }
  const slot = h("div", { "data-testid": "checkpoint-output" });
  setChildren(
    container,
    h("table", { class: "data stack", "data-testid": "checkpoints" },
      h("thead", {}, h("tr", {}, ["Step", "Source", "Next", "Checkpoint", ""].map((t) => h("th", { scope: "col" }, t)))),
      h("tbody", {}, list.map((c) => {
        const cid = pick(c, "checkpointId");
        const next = Array.isArray(c.next) ? c.next.join(", ") : c.next;
        return h("tr", { "data-testid": "checkpoint-row" },
          h("td", { "data-label": "Step" }, String(c.step ?? "—")),
          h("td", { "data-label": "Source" }, c.source || "—"),
          h("td", { "data-label": "Next" }, next || "— (end)"),
          h("td", { "data-label": "Checkpoint", class: "mono" }, cid),
          h("td", { "data-label": "" }, h("button", {
            type: "button", class: "small", "data-testid": "checkpoint-rerun",
            disabled: !next, title: next ? "从这个 checkpoint 继续运行（新会话）" : "这是最后一个 checkpoint，没有后续节点",
            onclick: (ev) => rerunFrom(id, cid, ev.currentTarget, slot),
          }, "从这里重跑")));
      }))),
    slot,
  );
}

async function openSession(id) {
  for (const tr of els.table.querySelectorAll("tr[data-session-id]")) tr.classList.toggle("selected", tr.dataset.sessionId === id);
  if (!id) {
    els.detail.hidden = true;
    clear(els.detail);
    return;
  }
  const token = ++detailToken;
  els.detail.hidden = false;
  setChildren(els.detail, loadingState(`加载会话 ${id}…`));
  let data;
  try {
    data = await api(`/api/sessions/${encodeURIComponent(id)}`);
  } catch (err) {
    if (token !== detailToken) return;
    setChildren(els.detail, h("h2", { id: "session-detail-title" }, `Session ${id}`), errorBox(`加载失败：${describeError(err)}`, "session-error"));
    return;
  }
  if (token !== detailToken) return;
  const s = data.session || {};
  const steps = data.steps || [];
  const invs = data.invocations || [];
  const answer = h("div", { "data-testid": "session-answer" });
  setMarkdown(answer, withoutLedgerBlock(s.answer || ""));
  linkCitations(answer, hintsFromInvocations(invs));
  linkLedger(answer, ledgerFrom(s.answer), new Set(invs.map((inv) => pick(inv, "callKey")).filter(Boolean)));
  const replaySlot = h("div", { "data-testid": "replay-output", "aria-live": "polite" });
  const replayBtn = h("button", { type: "button", class: "primary", "data-testid": "replay-button",
    onclick: () => replay(id, replayBtn, replaySlot) }, "Replay (rerun)");
  const checkpoints = h("div", { "data-testid": "checkpoints-container" });
  const selfEval = pick(s, "selfEvaluation");
  const factors = selfEval && Array.isArray(selfEval.factors) ? selfEval.factors : [];
  setChildren(
    els.detail,
    h("div", { class: "page-head" },
      h("h2", { id: "session-detail-title" }, "Session ", h("span", { class: "mono", "data-testid": "session-detail-id" }, pick(s, "sessionId") || id)),
      h("div", { class: "actions" }, replayBtn,
        h("button", { type: "button", onclick: () => {
          history.pushState(null, "", location.pathname + location.search);
          openSession("");
        } }, "关闭"))),
    h("p", { "data-testid": "session-query" }, h("strong", {}, "问题："), s.query || "—"),
    h("div", { class: "summary-grid" },
      cell("状态", statusBadge(s.status, "session-detail-status")),
      cell("Flow", pick(s, "agentFlow")),
      cell("耗时", fmtDuration(pick(s, "totalDurationMs"))),
      cell("Tokens", pick(s, "totalTokens")),
      cell("Steps / tool calls", `${pick(s, "totalSteps") ?? steps.length} / ${pick(s, "totalToolCalls") ?? invs.length}`),
      cell("Evidence score", scoreText(pick(s, "evidenceScore")), "session-detail-evidence"),
      cell("反馈 feedback", feedbackBadge(s.feedback)),
      cell("Thread", h("span", { class: "mono" }, pick(s, "threadId") || "—")),
      cell("创建 / 完成", `${fmtDate(pick(s, "createdAt"))} / ${fmtDate(pick(s, "completedAt"))}`),
      pick(s, "replayOf") ? cell("Replay of", h("a", { href: `#${encodeURIComponent(pick(s, "replayOf"))}` }, pick(s, "replayOf"))) : null),
    replaySlot,
    pick(s, "errorMessage") ? errorBox(`错误：${pick(s, "errorMessage")}`, "session-error-message") : null,
    h("h3", {}, "回答 Answer"),
    s.answer ? answer : h("p", { class: "muted" }, "（没有回答）"),
    selfEval ? [h("h3", {}, "证据评分 Evidence"),
      factors.length ? h("ul", { "data-testid": "evidence-factors" }, factors.map((f) => h("li", {}, factorText(f)))) : null,
      jsonDetails("selfEvaluation (JSON)", selfEval)] : null,
    h("h3", {}, `步骤 Steps (${steps.length})`),
    steps.length ? h("div", { "data-testid": "session-steps" }, steps.map(stepView)) : h("p", { class: "muted" }, "没有记录的模型步骤。"),
    h("h3", {}, `工具调用 Tool invocations (${invs.length})`),
    invs.length ? h("div", { "data-testid": "session-invocations" }, invs.map(invocationView)) : h("p", { class: "muted" }, "没有工具调用。"),
    h("h3", {}, "Checkpoints（时间旅行：从任一步继续运行）"),
    checkpoints,
  );
  loadCheckpoints(id, checkpoints);
  els.detail.focus({ preventScroll: true });
  els.detail.scrollIntoView({ block: "start", behavior: "smooth" });
}

// ---- wiring -------------------------------------------------------------------------------------

function onFilter() {
  state.status = els.status.value;
  state.flow = els.flow.value;
  state.origin = els.origin.value;
  state.q = els.q.value.trim();
  state.from = els.from.value;
  state.to = els.to.value;
  state.pageSize = Number(els.pageSize.value) || 20;
  state.page = 1;
  loadSessions();
}
els.status.addEventListener("change", onFilter);
els.flow.addEventListener("change", onFilter);
els.origin.addEventListener("change", onFilter);
els.pageSize.addEventListener("change", onFilter);
els.q.addEventListener("input", debounce(onFilter, 300));
els.from.addEventListener("change", onFilter);
els.to.addEventListener("change", onFilter);
$("session-filters").addEventListener("submit", (ev) => ev.preventDefault());
$("session-refresh").addEventListener("click", () => {
  loadSessions();
  if (currentId()) openSession(currentId());
});
window.addEventListener("hashchange", () => openSession(currentId()));

initShell();
loadSessions();
if (currentId()) openSession(currentId());
