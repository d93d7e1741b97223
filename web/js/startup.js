// The server's start, shown on every page: a banner under the top nav while /healthz says
// "starting" (503: services not up yet) or "importing" (the first import of the knowledge base runs,
// a crash's imports are re-imported, or a damaged vector store is rebuilt; per file, and per chunk
// batch while a window of files is embedded). It goes away when done.

const POLL_MS = 1000;

function el(tag, attrs = {}, text = "") {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, v);
  if (text) node.textContent = text;
  return node;
}

async function health() {
  // Not api(): a 503 "starting" is an answer here, not an error.
  const resp = await fetch("/healthz", { headers: { Accept: "application/json" } });
  return resp.json();
}

/** Share of the import done, 0..1: finished files, plus the embedded share of the current window. */
export function importShare(job) {
  const total = job.total || 0;
  if (!total) return 0;
  let done = job.processed || 0;
  const emb = job.embedding;
  if (emb && emb.total) {
    const width = emb.last - emb.first + 1;
    // Embedding is most of a window's time; writing its files is the rest.
    done = Math.max(done, emb.first - 1 + 0.9 * (emb.done / emb.total) * width);
  }
  return Math.min(1, done / total);
}

/** "正在嵌入第 1–7 个文件：32 / 288 个 chunk" for a job's embedding batch. */
export function embeddingText(emb) {
  const files = emb.first === emb.last ? `第 ${emb.first} 个文件` : `第 ${emb.first}–${emb.last} 个文件`;
  return `正在嵌入${files}：${emb.done} / ${emb.total} 个 chunk`;
}

export function importText(job) {
  const parts = [`已导入 ${job.processed ?? 0} / ${job.total ?? 0} 个文件`];
  if (job.embedding) parts.push(embeddingText(job.embedding));
  const last = (job.files || []).at(-1);
  if (last) parts.push(`最近：${last.file} ${last.status}`);
  return parts.join(" · ");
}

/** [title, note]: a vector store being repaired, a crash's imports re-imported, or the first import. */
export function bannerText(hz, job) {
  if (hz.repair) {
    return ["正在修复向量库", ` — 向量库的文件已损坏，已移到 ${hz.repair.setAsideIn}，正从文档重建；检索只能找到已重建的文档（关键词检索覆盖全部）。`];
  }
  if (job.recovery) return ["恢复中断的导入", " — 检索只能找到已索引的文档。"];
  return ["首次导入知识库", " — 检索只能找到已索引的文档。"];
}

function render(banner, hz) {
  banner.replaceChildren();
  banner.dataset.phase = hz.status;
  if (hz.status === "starting") {
    banner.append(el("strong", {}, "服务启动中"), document.createTextNode(" — 正在迁移数据库、加载嵌入模型、打开向量库，几秒后即可使用。"));
    return;
  }
  const job = hz.import || {};
  const pct = Math.round(importShare(job) * 100);
  const [title, note] = bannerText(hz, job);
  const bar = el("div", { class: "progress", role: "progressbar", "aria-valuemin": "0", "aria-valuemax": "100", "aria-valuenow": String(pct), "aria-label": `${title}进度` });
  const fill = el("span");
  fill.style.width = `${pct}%`;
  bar.append(fill);
  banner.append(
    el("strong", {}, title),
    document.createTextNode(note),
    el("span", { "data-testid": "startup-progress" }, importText(job)),
    bar,
  );
}

/** Watch /healthz until the start is over; onDone runs once then (e.g. to refresh the header). */
export function watchStartup(onDone) {
  const banner = el("div", { class: "startup-banner", role: "status", "data-testid": "startup-banner" });
  let shown = false;
  const tick = async () => {
    let hz;
    try {
      hz = await health();
    } catch {
      setTimeout(tick, POLL_MS * 3); // the server is not up (yet): try again, quietly
      return;
    }
    if (hz.status === "starting" || hz.status === "importing") {
      render(banner, hz);
      if (!shown) document.querySelector(".topnav")?.after(banner);
      shown = true;
      setTimeout(tick, POLL_MS);
      return;
    }
    if (shown) {
      banner.remove();
      window.dispatchEvent(new CustomEvent("superbiz:started", { detail: hz }));
      onDone?.();
    }
  };
  tick();
}
