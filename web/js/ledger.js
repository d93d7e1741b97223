// The evidence ledger of an AI-Ops report: the report cites "[E3]"; its text ends with the ledger
// as a Markdown table and a ```superbiz-ledger JSON block (stored with the session's answer).
// Here each [E3] becomes a button that opens the ledger at that entry: what the source said, its
// time, and the tool call (or runbook section) it came from — on the session page the call's
// recorded invocation is one click further.

import { h } from "./ui.js";

const BLOCK = /\n?```superbiz-ledger\n([\s\S]*?)\n```\s*$/;
const REF = /\[(E\d+)\]/g;
const HEADINGS = ["证据台账", "Evidence ledger"];

/** The ledger entries a report carries ([] when it has none or the block is unreadable). */
export function ledgerFrom(text) {
  const m = String(text ?? "").match(BLOCK);
  if (!m) return [];
  try {
    const data = JSON.parse(m[1]);
    return Array.isArray(data) ? data : [];
  } catch {
    return [];
  }
}

/** The report without its machine-readable block (the table stays for a plain reader). */
export function withoutLedgerBlock(text) {
  return String(text ?? "").replace(BLOCK, "");
}

function where(e) {
  const src = [e.source, e.section ? `§ ${e.section}` : ""].filter(Boolean).join(" ");
  return src || "—";
}

function entryView(e, callKeys) {
  const call = e.call_id
    ? callKeys.has(e.call_id)
      ? h("a", { href: `#call-${e.call_id}`, "data-testid": "ledger-call", onclick: (ev) => {
        ev.preventDefault();
        const target = document.querySelector(`[data-call-key="${CSS.escape(e.call_id)}"]`);
        target?.scrollIntoView({ block: "center", behavior: "smooth" });
        target?.classList.add("flash");
        setTimeout(() => target?.classList.remove("flash"), 1600);
      } }, `${e.tool} ${e.call_id}`)
      : h("span", { class: "mono", "data-testid": "ledger-call" }, `${e.tool} ${e.call_id}`)
    : null;
  return h("div", { class: "ledger-entry", role: "listitem", id: `ledger-${e.id}`, "data-testid": "ledger-entry", "data-entry": e.id, tabindex: "-1" },
    h("div", { class: "ledger-head" },
      h("b", {}, e.id),
      h("span", { class: "badge neutral" }, e.kind),
      e.ts ? h("span", { class: "mono muted" }, e.ts) : null,
      h("span", { class: "muted" }, where(e))),
    h("div", { class: "ledger-text" }, e.text),
    call ? h("div", { class: "ledger-call muted" }, "来源调用 source call: ", call) : null);
}

function open(panel, id) {
  panel.open = true;
  for (const el of panel.querySelectorAll(".ledger-entry.active")) el.classList.remove("active");
  const li = panel.querySelector(`#ledger-${CSS.escape(id)}`);
  if (!li) return;
  li.classList.add("active");
  li.scrollIntoView({ block: "nearest", behavior: "smooth" });
  li.focus({ preventScroll: true });
}

/** Turn the report's [E3] marks into buttons and its ledger table into the openable ledger.
 * `callKeys`: the tool calls shown on the page (their invocations can be scrolled to). */
export function linkLedger(container, entries, callKeys = new Set()) {
  if (!entries.length) return null;
  const ids = new Set(entries.map((e) => e.id));
  const panel = h("details", { class: "ledger", "data-testid": "evidence-ledger" },
    h("summary", {}, `证据台账 Evidence ledger (${entries.length})`),
    h("div", { class: "ledger-list", role: "list" }, entries.map((e) => entryView(e, callKeys))));
  // the rendered table under the ledger heading is replaced by the panel
  const heading = [...container.querySelectorAll("h2")].find((el) => HEADINGS.includes(el.textContent.trim()));
  if (heading) {
    const next = heading.nextElementSibling;
    if (next && next.tagName === "TABLE") next.remove();
    heading.after(panel);
  } else {
    container.append(panel);
  }
  const walker = document.createTreeWalker(container, NodeFilter.SHOW_TEXT, {
    acceptNode: (n) => (n.parentElement?.closest("a, pre, code, details.ledger") ? NodeFilter.FILTER_REJECT : NodeFilter.FILTER_ACCEPT),
  });
  const nodes = [];
  while (walker.nextNode()) {
    REF.lastIndex = 0;
    if (REF.test(walker.currentNode.nodeValue)) nodes.push(walker.currentNode);
  }
  for (const node of nodes) {
    const parts = [];
    let last = 0;
    const text = node.nodeValue;
    for (const m of text.matchAll(REF)) {
      if (!ids.has(m[1])) continue;
      parts.push(text.slice(last, m.index));
      parts.push(h("button", { type: "button", class: "ledger-ref", "data-testid": "ledger-ref", "data-entry": m[1],
        title: "打开证据台账 open the evidence ledger", onclick: () => open(panel, m[1]) }, m[1]));
      last = m.index + m[0].length;
    }
    parts.push(text.slice(last));
    node.replaceWith(...parts.filter((p) => p !== ""));
  }
  return panel;
}
