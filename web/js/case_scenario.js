// A case exported as an incident scenario: GET /api/cases/{id}/scenario gives a draft (the
// conversation, the world its tools saw, the runbooks and evidence the answer used, its cost),
// the operator writes the root cause and adjusts the rest, POST saves it under
// DATA_DIR/evals/scenarios (python -m evals run --suite local runs it) or it is downloaded as YAML.

import { api, describeError } from "./api.js";
import { icon } from "./icons.js";
import { errorBox, h, loadingState, okBox, openDialog, setChildren, wireDialog } from "./ui.js";

const lines = (text) => text.split("\n").map((s) => s.trim()).filter(Boolean);
// One concept per line; words meaning the same are separated by "|".
const concepts = (text) => lines(text).map((l) => {
  const words = l.split("|").map((w) => w.trim()).filter(Boolean);
  return words.length === 1 ? words[0] : words;
});
const conceptText = (items) => (items || []).map((c) => (Array.isArray(c) ? c.join(" | ") : c)).join("\n");

function checkList(checks, testid) {
  return h("ul", { class: "flush small-text", "data-testid": testid }, (checks || []).map((c) =>
    h("li", { "data-passed": String(c.passed) }, c.passed ? "✓ " : "✗ ", c.name, c.reason ? `：${c.reason}` : "")));
}

function field(label, control, hint) {
  return h("div", { class: "field" }, h("label", { for: control.id }, label), control, hint ? h("span", { class: "hint" }, hint) : null);
}

function textarea(id, value, rows = 3) {
  return h("textarea", { id, rows, "data-testid": id, value: value || "" });
}

function select(id, options, value) {
  const el = h("select", { id, "data-testid": id },
    h("option", { value: "" }, "— 请选择 —"),
    Object.entries(options).map(([k, v]) => h("option", { value: k, title: v }, `${k} — ${v}`)));
  el.value = value || "";
  return el;
}

function download(name, text) {
  const url = URL.createObjectURL(new Blob([text], { type: "application/yaml" }));
  const a = h("a", { href: url, download: name });
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 1000);
}

function editor(draft) {
  const s = draft.scenario;
  const e = s.expected || {};
  const cause = e.cause || {};
  const ev = e.evidence || {};
  const f = {
    id: h("input", { id: "sc-id", "data-testid": "sc-id", value: s.id, maxlength: 100 }),
    title: h("input", { id: "sc-title", "data-testid": "sc-title", value: s.title, maxlength: 255 }),
    intent: select("sc-intent", draft.intents, s.intent),
    runbooks: textarea("sc-runbooks", (e.runbooks || []).join("\n")),
    noRunbook: h("input", { type: "checkbox", id: "sc-no-runbook", "data-testid": "sc-no-runbook", checked: Boolean(e.no_runbook) }),
    category: select("sc-category", draft.categories, cause.category),
    causeNames: textarea("sc-cause-names", conceptText(cause.names)),
    names: textarea("sc-names", conceptText(e.names)),
    alerts: textarea("sc-alerts", (ev.alerts || []).join("\n"), 2),
    logs: textarea("sc-logs", (ev.logs || []).join("\n"), 2),
    forbidden: textarea("sc-forbidden", (e.forbidden || []).join("\n"), 2),
    calls: h("input", { type: "number", min: 1, id: "sc-calls", "data-testid": "sc-calls", value: e.cost?.model_calls ?? 8 }),
    tokens: h("input", { type: "number", min: 1, id: "sc-tokens", "data-testid": "sc-tokens", value: e.cost?.tokens ?? 8000 }),
    overwrite: h("input", { type: "checkbox", id: "sc-overwrite", "data-testid": "sc-overwrite", checked: draft.exists }),
  };
  const scenario = () => {
    const category = f.category.value;
    const causeNames = concepts(f.causeNames.value);
    return {
      ...s,
      id: f.id.value.trim(),
      title: f.title.value.trim(),
      intent: f.intent.value,
      expected: {
        ...e,
        runbooks: f.noRunbook.checked ? [] : lines(f.runbooks.value),
        no_runbook: f.noRunbook.checked,
        cause: category ? { category, names: causeNames } : null,
        names: concepts(f.names.value),
        evidence: { alerts: lines(f.alerts.value), logs: lines(f.logs.value) },
        forbidden: lines(f.forbidden.value),
        cost: { model_calls: Number(f.calls.value), tokens: Number(f.tokens.value) },
      },
    };
  };
  const form = h("div", { class: "scenario-form" },
    h("div", { class: "meta-fields" },
      field("场景 id", f.id, "文件名为 <id>.yaml"), field("标题 title", f.title), field("意图 intent", f.intent)),
    field("应引用的手册 expected runbooks（每行一个，引用其一即可）", f.runbooks),
    h("label", { class: "checkbox", for: "sc-no-runbook" }, f.noRunbook, "知识库没有对应手册：正确回答应说明未找到"),
    h("fieldset", { class: "meta-fields" }, h("legend", {}, "根因 root cause（保存前必填）"),
      field("类别 category", f.category),
      field("正确诊断会说出的词 names", f.causeNames, "每行一个概念；同义词用 | 分隔，如：慢查询 | slow query")),
    field("其他要点 names（如处置步骤）", f.names, "每行一个概念；同义词用 | 分隔"),
    h("div", { class: "meta-fields" },
      field("必须用到的告警 alerts", f.alerts), field("必须引用的日志片段 logs", f.logs)),
    field("不能出现的结论 forbidden claims", f.forbidden, "每行一条；否定的提及（不要…）不算"),
    h("div", { class: "meta-fields" }, field("模型调用上限", f.calls), field("token 上限", f.tokens)),
    h("label", { class: "checkbox", for: "sc-overwrite" }, f.overwrite, "覆盖同名场景 overwrite"));
  return { form, scenario, overwrite: () => f.overwrite.checked };
}

/** Opens the export dialog of one case. */
export async function openScenarioExport(caseId) {
  const body = h("div", { class: "dialog-body" }, loadingState("正在生成场景草稿…"));
  const foot = h("div", { class: "dialog-foot" });
  const dlg = h("dialog", { class: "wide", "aria-labelledby": "sc-title-head", "data-testid": "scenario-dialog" },
    h("div", { class: "dialog-head" }, h("h2", { id: "sc-title-head" }, "导出为评测场景 Export as eval scenario"),
      h("button", { type: "button", "data-close": "", "aria-label": "关闭" }, icon("x"))),
    body, foot);
  wireDialog(dlg);
  dlg.addEventListener("close", () => dlg.remove());
  document.body.append(dlg);
  openDialog(dlg);
  let draft;
  try {
    draft = await api(`/api/cases/${encodeURIComponent(caseId)}/scenario`);
  } catch (err) {
    setChildren(body, errorBox(`无法导出：${describeError(err)}`, "scenario-error"));
    return;
  }
  const ed = editor(draft);
  const status = h("div", { "aria-live": "polite", "data-testid": "scenario-status" });
  setChildren(body,
    h("p", { class: "muted small-text" }, "草稿来自这个案例的会话：问题、工具返回的告警与日志（world）、回答引用的手册与证据、成本。请写下根因后保存；保存到 ",
      h("code", {}, draft.path), "，用 ", h("code", {}, "python -m evals run --suite local"), " 运行。"),
    (draft.warnings || []).map((w) => h("div", { class: "alert warn small-text" }, w)),
    h("details", { open: true }, h("summary", {}, draft.passesOnRecordedAnswer ? "草稿在已记录的回答上全部通过" : "草稿在已记录的回答上的检查"),
      checkList(draft.recordedChecks, "scenario-recorded-checks")),
    ed.form, status);
  const save = h("button", { type: "button", class: "primary", "data-testid": "scenario-save" }, "保存 Save");
  const yamlBtn = h("button", { type: "button", "data-testid": "scenario-download" }, "下载 YAML");
  save.addEventListener("click", async () => {
    save.disabled = true;
    try {
      const res = await api(`/api/cases/${encodeURIComponent(caseId)}/scenario`, {
        method: "POST", json: { scenario: ed.scenario(), overwrite: ed.overwrite() },
      });
      setChildren(status,
        okBox(`已保存：${res.path}`, "scenario-saved"),
        h("p", { class: "small-text" }, res.passesOnRecordedAnswer ? "已记录的回答满足这个场景的全部检查。" : "注意：已记录的回答没有通过这个场景的全部检查："),
        checkList(res.recordedChecks, "scenario-saved-checks"));
      yamlBtn.onclick = () => download(`${res.scenarioId}.yaml`, res.yaml);
    } catch (err) {
      setChildren(status, errorBox(`保存失败：${describeError(err)}`, "scenario-save-error"));
    } finally {
      save.disabled = false;
    }
  });
  yamlBtn.onclick = () => download(`${draft.scenario.id}.yaml`, draft.yaml);
  setChildren(foot, h("button", { type: "button", onclick: () => dlg.close() }, "关闭"), yamlBtn, save);
}
