// Chat page, the trace drawer under an answer: node / tool_call / tool_result events as they
// stream (a node_end fills in its node's duration), the session's retrieved domains and the link
// to the full record on the Sessions page.

import { icon } from "./icons.js";
import { fmtDuration, h, levelBadge, pick } from "./ui.js";

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

let drawerCounter = 0;

/** One answer's trace: `button` opens and closes `el`, the drawer. */
export class TraceDrawer {
  constructor(events) {
    const n = ++drawerCounter;
    this.list = h("ol", { "data-testid": "trace-list" });
    this.count = h("span", {}, "");
    this.domains = h("div", { class: "muted small-text", "data-testid": "trace-session-domains", hidden: true });
    this.sessionLink = h("a", { "data-testid": "session-link", hidden: true }, "在 Sessions 页查看完整记录 →");
    this.el = h("div", { class: "trace", id: `trace-${n}`, hidden: true, "data-testid": "trace-drawer" },
      h("div", { class: "muted small-text" }, "Trace：node / tool_call / tool_result 事件（实时）"),
      this.list, this.domains, this.sessionLink);
    this.button = h("button", {
      type: "button", class: "small", "aria-expanded": "false", "aria-controls": `trace-${n}`,
      "data-testid": "trace-toggle", onclick: () => this.toggle(),
    }, "Trace ", this.count);
    for (const ev of events) addTraceEvent(this.list, ev);
  }

  /** Redraws what the message says: its session's link, the event count, the latest domains. */
  render(sessionId, events) {
    if (sessionId) {
      this.sessionLink.href = `/sessions#${encodeURIComponent(sessionId)}`;
      this.sessionLink.hidden = false;
    }
    this.count.textContent = `(${this.list.children.length})`;
    const domains = [...events].reverse().map((e) => pick(e, "retrievedDomainsThisSession")).find((d) => d);
    this.showDomains(domains);
  }

  toggle(force) {
    const open = force ?? this.el.hidden;
    this.el.hidden = !open;
    this.button.setAttribute("aria-expanded", String(open));
  }

  add(ev) {
    addTraceEvent(this.list, ev);
    this.count.textContent = `(${this.list.children.length})`;
    const domains = pick(ev, "retrievedDomainsThisSession");
    if (domains) this.showDomains(domains);
  }

  showDomains(domains) {
    const text = fmtDomains(domains);
    this.domains.textContent = text ? `retrievedDomainsThisSession: ${text}` : "";
    this.domains.hidden = !text;
  }
}
