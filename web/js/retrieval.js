// Retrieval hit testing: run one knowledge lookup and show what the model sees next to the raw
// per-route scores (L0 titles; per document: level, confidence, dense similarity, BM25, ranks; per
// chunk: dense similarity, BM25, RRF, ranks).

import { api, describeError } from "./api.js";
import { icon } from "./icons.js";
import {
  emptyState, errorBox, fmtDate, fmtNum, h, initShell, json, jsonDetails, levelBadge, loadingState,
  pick, setChildren,
} from "./ui.js";

const $ = (id) => document.getElementById(id);
const els = {
  form: $("lookup-form"),
  query: $("lookup-query"),
  submit: $("lookup-submit"),
  result: $("lookup-result"),
  examples: $("examples"),
  domains: $("domains"),
  overrides: $("lookup-overrides"),
  grid: $("ov-grid"),
};
const EXAMPLES = ["ERR_TIMEOUT", "支付超时怎么处理", "MySQL 连接池耗尽", "Redis maxmemory eviction", "Flyway migration failed"];
let token = 0;

function cell(label, value, testid) {
  return h("div", { class: "cell" }, h("span", { class: "k" }, label),
    h("span", testid ? { "data-testid": testid } : {}, value instanceof Node ? value : String(value ?? "—")));
}

function fmtDomains(domains) {
  if (!domains) return "—";
  if (Array.isArray(domains)) return domains.length ? domains.join(", ") : "—";
  if (typeof domains === "object") {
    const entries = Object.entries(domains);
    return entries.length ? entries.map(([d, p]) => `${d}: ${Array.isArray(p) ? p.join(", ") : p}`).join("; ") : "—";
  }
  return String(domains);
}

// ---- per-request settings: the knobs the server lists (GET /api/knowledge/lookup/knobs) ----------

let knobs = [];

function knobControl(k) {
  const id = `ov-${k.name}`;
  const attrs = { id, "data-testid": id, "data-param": k.name, title: k.description };
  const control = k.enum
    ? h("select", attrs, h("option", { value: "" }, `服务端配置 (${k.value})`),
      k.enum.map((v) => h("option", { value: v }, k.enumLabels?.[v] ?? v)))
    : h("input", {
      ...attrs, type: "number", min: k.minimum ?? k.exclusiveMinimum, max: k.maximum,
      step: k.type === "integer" ? 1 : (k.maximum ?? Infinity) <= 1 ? 0.01 : 0.1,
      placeholder: k.value ?? "",
    });
  return h("div", { class: "field" }, h("label", { for: id }, k.label), control);
}

async function loadKnobs() {
  try {
    knobs = await api("/api/knowledge/lookup/knobs");
  } catch (err) {
    els.grid.prepend(errorBox(`检索参数加载失败：${describeError(err)}`, "knobs-error"));
    return;
  }
  els.grid.prepend(...knobs.map(knobControl));
}

/** The controls the operator filled in, as request fields (empty = the server's setting). */
function overrides() {
  const out = {};
  for (const el of els.overrides.querySelectorAll("[data-param]")) {
    const raw = el.value.trim();
    if (!raw) continue;
    out[el.dataset.param] = el.type === "number" ? Number(raw) : raw;
  }
  return out;
}

function appliedSettings(settings) {
  if (!settings) return null;
  const overridden = new Set(settings.overridden || []);
  const shown = knobs.length ? knobs : Object.keys(settings).filter((k) => k !== "overridden").map((name) => ({ name, label: name }));
  return h("div", { class: "kv applied-settings", "data-testid": "applied-settings" },
    h("span", { class: "muted" }, "本次参数："),
    shown.map(({ name, label }) => h("span", {
      class: overridden.has(name) ? "overridden" : null,
      "data-testid": `applied-${name}`,
      "data-overridden": String(overridden.has(name)),
      title: overridden.has(name) ? "本次请求指定的值" : "服务端配置",
    }, `${label} `, h("b", {}, String(settings[name] ?? "—")))),
    overridden.size ? null : h("span", { class: "muted" }, "（全部为服务端配置）"));
}

function fmtTimings(t) {
  if (!t || typeof t !== "object") return "—";
  return Object.entries(t).map(([k, v]) => `${k} ${fmtNum(v, 1)} ms`).join(" · ");
}

function l1Table(rows) {
  const head = ["#", "Source", "Breadcrumb", "Dense similarity", "BM25 score", "RRF score", "Dense rank", "BM25 rank", "Shown"];
  return h("div", { class: "table-wrap" },
    h("table", { class: "data stack", "data-testid": "l1-table" },
      h("thead", {}, h("tr", {}, head.map((t, i) => h("th", { scope: "col", class: i >= 3 && i <= 7 ? "num" : null }, t)))),
      h("tbody", {}, rows.map((r, i) => {
        const valid = Boolean(r.valid);
        const dist = pick(r, "denseDistance");
        return h("tr", { "data-testid": "l1-row", class: valid ? null : "invalid", "data-valid": String(valid) },
          h("td", { "data-label": head[0] }, String(i + 1)),
          h("td", { "data-label": head[1], class: "mono", "data-testid": "l1-source" }, r.source ?? "—",
            pick(r, "chunkIndex") !== undefined ? h("span", { class: "muted" }, ` [chunk ${pick(r, "chunkIndex")}]`) : null),
          h("td", { "data-label": head[2] }, r.breadcrumb ?? "—"),
          h("td", { "data-label": head[3], class: "num", title: dist !== undefined && dist !== null ? `dense L2 distance ${dist}` : "dense route did not return this chunk" }, fmtNum(pick(r, "denseSimilarity"))),
          h("td", { "data-label": head[4], class: "num" }, fmtNum(pick(r, "bm25Score"))),
          h("td", { "data-label": head[5], class: "num" }, fmtNum(r.rrf ?? pick(r, "rrfScore"), 5)),
          h("td", { "data-label": head[6], class: "num" }, String(pick(r, "denseRank") ?? "—")),
          h("td", { "data-label": head[7], class: "num" }, String(pick(r, "bm25Rank") ?? "—")),
          h("td", { "data-label": head[8] }, h("span", { class: `badge ${valid ? "status-SUCCESS" : "status-PENDING"}` }, valid ? "shown" : "not shown")));
      }))));
}

function docTable(docs) {
  const head = ["#", "Source", "Level", "Confidence", "Dense similarity", "BM25 score", "Ranks (dense · BM25 · L0)", "Shown"];
  return h("div", { class: "table-wrap" },
    h("table", { class: "data stack", "data-testid": "doc-table" },
      h("thead", {}, h("tr", {}, head.map((t, i) => h("th", { scope: "col", class: i >= 3 && i <= 5 ? "num" : null }, t)))),
      h("tbody", {}, docs.map((d, i) => {
        const ranks = d.ranks || {};
        const shown = Boolean(d.shown);
        return h("tr", { "data-testid": "doc-row", class: shown ? null : "invalid", "data-shown": String(shown) },
          h("td", { "data-label": head[0] }, String(i + 1)),
          h("td", { "data-label": head[1], class: "mono", "data-testid": "doc-source" }, d.source ?? "—"),
          h("td", { "data-label": head[2] }, levelBadge(d.level || "NONE")),
          h("td", { "data-label": head[3], class: "num", "data-testid": "doc-confidence", title: "calibrated confidence (FS-2 thresholds apply to it)" }, fmtNum(d.confidence)),
          h("td", { "data-label": head[4], class: "num", title: "FS-1: 1 − min(d, max_l2) / max_l2" }, fmtNum(pick(d, "denseSimilarity"))),
          h("td", { "data-label": head[5], class: "num" }, fmtNum(pick(d, "bm25Score"))),
          h("td", { "data-label": head[6] }, ["dense", "bm25", "l0"].map((r) => ranks[r] ?? "—").join(" · ")),
          h("td", { "data-label": head[7] }, h("span", { class: `badge ${shown ? "status-SUCCESS" : "status-PENDING"}` }, shown ? "shown" : "not shown")));
      }))));
}

function contentBlock(item, testid, extra) {
  return h("div", { class: "content-block", "data-testid": testid },
    h("div", { class: "kv" },
      h("span", {}, "source ", h("b", { "data-testid": `${testid}-source` }, item.source ?? "—")),
      extra),
    h("pre", {}, typeof item.content === "string" ? item.content : json(item.content)));
}

function render(query, res) {
  const result = res.result || {};
  const scores = res.scores || {};
  const level = pick(result, "relevanceLevel") || pick(scores, "relevanceLevel") || "NONE";
  const hint = pick(result, "completenessHint") || pick(scores, "completenessHint");
  const l0 = pick(scores, "l0Titles") || [];
  const l1 = pick(scores, "l1Scores") || [];
  const docs = scores.documents || [];
  const layer = scores.layer;
  const primary = result.primary;
  const supplement = result.supplement || [];
  setChildren(
    els.result,
    h("section", { class: "panel", "aria-labelledby": "res-title" },
      h("h2", { id: "res-title" }, "结果 Result ", h("span", { class: "muted small-text" }, `“${query}”`)),
      h("div", { class: "summary-grid" },
        cell("relevanceLevel", levelBadge(level, { long: true }), "result-level"),
        cell("found", h("span", {}, icon(result.found ? "check" : "x"), result.found ? " true" : " false"), "result-found"),
        cell("layer", layer ?? "—", "result-layer"),
        cell("judge", scores.judge ?? "—", "result-judge"),
        cell("confidence", fmtNum(scores.confidence), "result-confidence"),
        cell("readability", fmtNum(scores.readability), "result-readability"),
        cell("L1 top similarity", fmtNum(pick(scores, "l1TopSimilarity"))),
        cell("route weights", pick(scores, "routeWeights") ? Object.entries(pick(scores, "routeWeights")).map(([k, v]) => `${k} ${v}`).join(" · ") : "—"),
        cell("timings", fmtTimings(pick(scores, "timingsMs")))),
      appliedSettings(res.settings),
      hint ? h("p", { "data-testid": "result-hint" }, h("strong", {}, "completenessHint："), hint) : null,
      result.message ? h("div", { class: "alert info", "data-testid": "result-message" }, result.message) : null),
    h("section", { class: "panel", "aria-labelledby": "l0-title" },
      h("h2", { id: "l0-title" }, `L0 关键词/标题匹配 (${l0.length})`),
      l0.length
        ? h("ul", { "data-testid": "l0-titles" }, l0.map((t) => h("li", { "data-testid": "l0-title" }, typeof t === "string" ? t : json(t))))
        : h("p", { class: "muted", "data-testid": "l0-empty" }, "L0 没有匹配：没有文档的 frontmatter keywords 或标题出现在查询里。"),
      l0.length === 1 && layer === "L0" ? h("p", { class: "muted small-text" }, "L0 唯一命中 → PRECISE，L1 检索已跳过。") : null),
    h("section", { class: "panel", "aria-labelledby": "l1-title" },
      h("h2", { id: "l1-title" }, `L1 混合检索：文档 ${docs.length} · 片段 ${l1.length}`),
      docs.length ? docTable(docs) : null,
      l1.length ? l1Table(l1)
        : h("p", { class: "muted", "data-testid": "l1-empty" }, layer === "L0" ? "L1 未执行（L0 已精确命中）。" : "L1 没有返回结果。"),
      pick(scores, "l1Error") ? errorBox(`L1 error: ${pick(scores, "l1Error")}`, "l1-error") : null,
      h("p", { class: "muted small-text" }, scores.judge === "dense"
        ? "judge = dense：相关度只按 dense similarity 判定（similarity = 1 − min(d, max_l2) / max_l2），RRF 只用于排序。"
        : "judge = calibrated：每篇文档的全部证据（模型能读懂时的 dense 相似度、BM25 强度、两路排名是否一致、与下一篇的差距、L0 命中）合成一个经开发评测集校准的置信度，0.75 / 0.5 阈值作用于它；dense similarity 仍照常计算并显示。readability = 嵌入模型能读懂的查询比例，dense 路的投票权重随之缩放。")),
    h("section", { class: "panel", "aria-labelledby": "model-title" },
      h("h2", { id: "model-title" }, "模型看到的内容 Model-facing payload"),
      primary
        ? [h("h3", {}, "Primary"), contentBlock(primary, "primary",
          primary.matchType || pick(primary, "matchType") ? h("span", {}, "matchType ", h("b", {}, primary.matchType || pick(primary, "matchType"))) : null)]
        : h("p", { class: "muted" }, "没有 primary 内容。"),
      supplement.length
        ? [h("h3", {}, `Supplement (${supplement.length})`), supplement.map((s) => contentBlock(s, "supplement",
          s.breadcrumb ? h("span", {}, "breadcrumb ", h("b", {}, s.breadcrumb)) : null))]
        : null,
      fmtDomains(pick(result, "retrievedDomainsThisSession")) !== "—"
        ? h("p", { class: "small-text muted", "data-testid": "result-domains" }, `retrievedDomainsThisSession: ${fmtDomains(pick(result, "retrievedDomainsThisSession"))}`)
        : null,
      jsonDetails("result (JSON，模型看到的全部字段)", result, "result-json"),
      jsonDetails("scores (JSON，原始分数，只进入记录)", scores, "scores-json")),
  );
}

async function lookup(query) {
  const q = query.trim();
  if (!q) {
    setChildren(els.result, errorBox("请输入检索词。", "lookup-error"));
    els.query.focus();
    return;
  }
  const my = ++token;
  const url = new URL(location.href);
  url.searchParams.set("q", q);
  history.replaceState(null, "", url);
  els.submit.disabled = true;
  els.result.setAttribute("aria-busy", "true");
  setChildren(els.result, loadingState("检索中…"));
  try {
    await knobsLoaded; // the controls, and the labels of what the lookup ran with, come from the server
    const res = await api("/api/knowledge/lookup", { method: "POST", json: { query: q, ...overrides() } });
    if (my === token) render(q, res);
  } catch (err) {
    if (my === token) setChildren(els.result, errorBox(`检索失败：${describeError(err)}`, "lookup-error"));
  } finally {
    if (my === token) {
      els.submit.disabled = false;
      els.result.removeAttribute("aria-busy");
    }
  }
}

async function loadDomains() {
  setChildren(els.domains, loadingState());
  let list;
  try {
    list = await api("/api/domains");
  } catch (err) {
    setChildren(els.domains, errorBox(`领域加载失败：${describeError(err)}`, "domains-error"));
    return;
  }
  if (!Array.isArray(list) || !list.length) {
    setChildren(els.domains, emptyState("还没有知识领域：先到「文档」页上传文档或重新导入知识库。", h("a", { class: "button primary", href: "/documents" }, "去文档页")));
    return;
  }
  const head = ["Domain", "Docs", "When to retrieve", "Source", "Updated"];
  setChildren(els.domains, h("table", { class: "data stack" },
    h("thead", {}, h("tr", {}, head.map((t) => h("th", { scope: "col" }, t)))),
    h("tbody", {}, list.map((d) => h("tr", { "data-testid": "domain-row" },
      h("td", { "data-label": head[0] }, h("strong", {}, d.name)),
      h("td", { "data-label": head[1], class: "num" }, String(pick(d, "documentCount") ?? "—")),
      h("td", { "data-label": head[2] }, pick(d, "whenToRetrieve") || "—"),
      h("td", { "data-label": head[3] }, d.source || "—"),
      h("td", { "data-label": head[4], class: "nowrap" }, fmtDate(pick(d, "updatedAt"))))))));
}

els.form.addEventListener("submit", (ev) => {
  ev.preventDefault();
  lookup(els.query.value);
});
setChildren(els.examples, h("span", { class: "muted small-text" }, "试试："),
  EXAMPLES.map((q) => h("button", { type: "button", class: "small", onclick: () => {
    els.query.value = q;
    lookup(q);
  } }, q)));

$("ov-reset").addEventListener("click", () => {
  for (const el of els.overrides.querySelectorAll("[data-param]")) el.value = "";
  if (els.query.value.trim()) lookup(els.query.value);
});

initShell();
const knobsLoaded = loadKnobs();
loadDomains();
const initial = new URLSearchParams(location.search).get("q");
if (initial) {
  els.query.value = initial;
  lookup(initial);
} else {
  setChildren(els.result, emptyState("输入关键词或问题后按 Enter，查看 L0 / L1 命中、各路分数和模型实际看到的内容。"));
}
