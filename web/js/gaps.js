// Knowledge gaps on the insights page: alerts with no firm runbook, questions answered "not
// found" (clustered), runbooks never retrieved, old runbooks whose alerts keep firing. Each gap
// offers "draft a runbook", which opens the draft in the documents page's upload form.

import { api, describeError } from "./api.js";
import { DRAFT_KEY } from "./draft.js";
import { emptyState, errorBox, fmtDate, h, levelBadge, loadingState, pick, setChildren } from "./ui.js";

const $ = (id) => document.getElementById(id);
const SECTIONS = [
  ["alerts", "告警无 runbook（或仅 REFERENCE）Alerts without a runbook", "没有这样的告警：每个触发过的告警都检索到了可依据的 runbook。"],
  ["questions", "未找到答案的问题（按相似度聚类）Questions answered “not found”", "没有检索无结果的问题。"],
  ["stale", "过期且告警仍在触发的 runbook Old runbooks, alerts still firing", "没有过期且仍在被告警命中的 runbook。"],
  ["unused", "窗口内从未被检索的 runbook Runbooks never retrieved", "每个 runbook 都至少被检索过一次。"],
];

function windowQuery() {
  const hours = Number($("insight-range")?.value || 0);
  return hours ? { since: new Date(Date.now() - hours * 3600_000).toISOString() } : {};
}

async function draft(gap, button, slot) {
  button.disabled = true;
  setChildren(slot, loadingState("正在起草…"));
  try {
    const d = await api("/api/insights/gaps/draft", {
      method: "POST",
      json: { kind: gap.kind, key: gap.key, ...windowQuery() },
    });
    sessionStorage.setItem(DRAFT_KEY, JSON.stringify({
      fileName: pick(d, "fileName"), markdown: d.markdown, category: d.category,
    }));
    location.href = "/documents#draft";
  } catch (err) {
    button.disabled = false;
    setChildren(slot, errorBox(`起草失败：${describeError(err)}`, "gap-draft-error"));
  }
}

function what(gap) {
  const detail = gap.detail || {};
  if (gap.kind === "alert") {
    const levels = Object.entries(detail.levels || {}).map(([k, n]) => `${k} ×${n}`).join(" · ");
    const closest = (detail.closest || []).join(", ");
    return `${levels}${closest ? ` · 最接近 ${closest}` : " · 无文档"}`;
  }
  if (gap.kind === "question") return (detail.variants || []).slice(0, 4).join(" ｜ ");
  if (gap.kind === "stale") return `${gap.key} · 版本 ${detail.version} · ${detail.ageDays} 天前 · 告警 ${(detail.alerts || []).join(", ")}`;
  return gap.key;
}

function gapRow(gap) {
  const slot = h("div", { class: "small-text" });
  const button = h("button", { type: "button", "data-testid": "gap-draft" }, "起草 runbook Draft");
  button.addEventListener("click", () => draft(gap, button, slot));
  const newest = (gap.evidence || [])[0];
  return h("tr", { "data-testid": `gap-${gap.kind}`, "data-key": gap.key },
    h("td", { "data-label": "缺口" }, h("b", {}, gap.title),
      h("div", { class: "muted small-text" }, what(gap))),
    h("td", { "data-label": "次数", class: "num" }, String(gap.count)),
    h("td", { "data-label": "最近", class: "nowrap" }, gap.lastSeen ? fmtDate(gap.lastSeen) : "—"),
    h("td", { "data-label": "证据" }, newest
      ? h("a", { href: `/sessions#${encodeURIComponent(newest.sessionId)}` }, levelBadge(newest.level), " ", newest.question.slice(0, 40))
      : h("span", { class: "muted" }, "—")),
    h("td", { "data-label": "" }, button, slot),
  );
}

function table(items) {
  return h("div", { class: "table-wrap" }, h("table", {},
    h("thead", {}, h("tr", {}, ...["缺口 Gap", "次数", "最近", "证据 Evidence", ""].map((t) => h("th", {}, t)))),
    h("tbody", {}, ...items.map(gapRow))));
}

export async function loadGaps() {
  const body = $("gaps-body");
  setChildren(body, loadingState("正在分析知识缺口…"));
  let d;
  try {
    d = await api("/api/insights/gaps", { query: windowQuery() });
  } catch (err) {
    setChildren(body, errorBox(`知识缺口加载失败：${describeError(err)}`, "gaps-error"));
    return;
  }
  setChildren(body, ...SECTIONS.map(([key, title, none]) => h("div", { class: "gap-section", "data-testid": `gaps-${key}` },
    h("h3", {}, `${title}（${d[key].length}）`),
    d[key].length ? table(d[key]) : emptyState(none))));
}

$("insight-range")?.addEventListener("change", loadGaps);
$("insight-refresh")?.addEventListener("click", loadGaps);
loadGaps();
