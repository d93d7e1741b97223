// Documents page, the knowledge-base re-import (POST /api/knowledge/init): starts the job and
// polls it, showing per-file progress, the embedding step and the summary.

import { api, describeError } from "./api.js";
import { embeddingText, importShare } from "./startup.js";
import { errorBox, h, jsonDetails, loadingState, openDialog, pick, setChildren, statusBadge, wireDialog } from "./ui.js";

const $ = (id) => document.getElementById(id);
const els = {
  dialog: wireDialog($("reimport-dialog")),
  force: $("reimport-force"),
  start: $("reimport-start"),
  progress: $("reimport-progress"),
};
let jobTimer = null;

export function openReimport() {
  openDialog(els.dialog);
  els.start.focus();
}

function summaryText(sm) {
  const parts = ["total", "indexed", "failed", "skipped", "removed"]
    .filter((k) => sm[k] !== undefined)
    .map((k) => `${k} ${sm[k]}`);
  const ms = pick(sm, "durationMs");
  if (ms !== undefined) parts.push(`${(Number(ms) / 1000).toFixed(1)} s`);
  return parts.join(" · ");
}

function renderJob(job) {
  const total = job.total || 0;
  const processed = job.processed || 0;
  // Per chunk batch too: a window of files is embedded before any of them is written.
  const pct = total ? Math.round(importShare(job) * 100) : job.status === "running" ? 0 : 100;
  const files = job.files || [];
  setChildren(
    els.progress,
    h("p", {}, "任务 ", h("code", {}, pick(job, "jobId")), " ", statusBadge(job.status, "job-status"),
      ` ${processed} / ${total}`,
      job.embedding ? h("span", { class: "muted", "data-testid": "job-embedding" }, ` · ${embeddingText(job.embedding)}`) : null),
    h("div", { class: "progress", role: "progressbar", "aria-valuemin": "0", "aria-valuemax": "100", "aria-valuenow": String(pct), "aria-label": "导入进度" },
      h("span", { style: { width: `${pct}%` } })),
    job.error ? errorBox(`导入失败：${job.error}`, "job-error") : null,
    files.length
      ? h("ul", { "data-testid": "job-files", style: { paddingLeft: "18px" } },
        files.map((f) => h("li", { "data-testid": "job-file" }, h("code", {}, f.file), " ", statusBadge(f.status, "job-file-status"),
          f.chunks !== undefined && f.chunks !== null ? ` ${f.chunks} chunks` : "",
          f.error ? h("div", { class: "field-error small-text" }, f.error) : null)))
      : job.status === "running" ? loadingState("扫描文件中…") : null,
    job.status !== "running" && !files.length && !job.error
      ? h("p", { class: "muted", "data-testid": "job-nothing" }, "没有新增或改动的文件，知识库已是最新。勾选「强制重建 (force)」可重新索引全部文档。")
      : null,
    job.summary ? h("p", { "data-testid": "job-summary" }, summaryText(job.summary)) : null,
    job.summary ? jsonDetails("summary (JSON)", job.summary) : null,
  );
}

/** Wires the dialog's start button; `afterImport` runs when a job has finished. */
export function initReimport({ afterImport }) {
  async function pollJob(jobId) {
    clearTimeout(jobTimer);
    try {
      const job = await api(`/api/knowledge/jobs/${encodeURIComponent(jobId)}`);
      renderJob(job);
      if (job.status === "running") {
        jobTimer = setTimeout(() => pollJob(jobId), 800);
        return;
      }
      els.start.disabled = false;
      afterImport();
    } catch (err) {
      els.progress.append(errorBox(`查询任务失败：${describeError(err)}`, "job-error"));
      els.start.disabled = false;
    }
  }

  els.start.addEventListener("click", async () => {
    els.start.disabled = true;
    setChildren(els.progress, loadingState("正在启动导入…"));
    try {
      const res = await api("/api/knowledge/init", { method: "POST", query: { force: els.force.checked ? "true" : "false" } });
      pollJob(pick(res, "jobId"));
    } catch (err) {
      setChildren(els.progress, errorBox(`无法开始导入：${describeError(err)}`, "job-error"));
      els.start.disabled = false;
    }
  });
}
