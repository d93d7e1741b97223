"""The real server's resident memory after large hostile documents (issues 17 and 20).

``python -m server`` on a fresh data folder with the shipped ``knowledge_base/``: its RSS after
start-up, after uploading large hostile documents one by one through ``POST
/api/documents/upload`` (a single line of several MB, a list nested thousands of levels deep, a
Chinese document of MBs), and after deleting them again. Memory that an upload's parse, chunks,
embedding batches and vector-store payloads leave behind shows as "after deletes" staying above
"after start".

``--rev REV`` also measures that commit (extracted with ``git archive``, run with this venv), in
the same run, before the working tree. Targets: RSS after start ≤ 1 GB; after the deletes within
15 % of after start. Prints one JSON document.
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import tempfile
import time
from pathlib import Path

import httpx
from _server import ROOT, SMOKE_RUNBOOKS, start_server
from bench_http import rss_mb, tree_rss_mb

TARGET_START_MB, TARGET_RETURN = 1024.0, 0.15
WORDS = [
    "timeout",
    "retry",
    "pool",
    "redis",
    "memory",
    "eviction",
    "latency",
    "pod",
    "restart",
    "error",
    "order",
    "payment",
]
HANZI = "支付网关返回超时应先查询订单状态再决定是否重试数据库连接池满了怎么办内存告警排查"


def hostile_documents(line_mb: float, depth: int, chinese_mb: float) -> dict[str, bytes]:
    rnd = random.Random(20)
    line = " ".join(rnd.choice(WORDS) for _ in range(int(line_mb * 2**20 / 7)))
    nested = "\n".join("  " * i + f"- level {i} {rnd.choice(WORDS)}" for i in range(depth))
    paras, size = [], 0
    while size < chinese_mb * 2**20:
        p = "".join(rnd.choice(HANZI) for _ in range(300)) + "。"
        paras.append(p)
        size += len(p.encode())
    return {
        "one-line.md": ("# One line\n\n" + line + "\n").encode(),
        "nested-list.md": ("# Nested\n\n" + nested + "\n").encode(),
        "chinese.md": ("# 中文长文\n\n" + "\n\n".join(paras) + "\n").encode(),
    }


def extract(rev: str, dest: Path) -> Path:
    archive = subprocess.run(["git", "archive", rev], cwd=ROOT, capture_output=True, check=True)
    subprocess.run(["tar", "-x", "-C", str(dest)], input=archive.stdout, check=True)
    return dest


def measure(docs: dict[str, bytes], code_root: Path | None, smoke: bool) -> dict:
    runbooks = SMOKE_RUNBOOKS if smoke else None
    with tempfile.TemporaryDirectory(prefix="bench-memory-") as tmp:
        server = start_server(
            Path(tmp), runbooks=runbooks, root=code_root or ROOT, LOG_LEVEL="WARNING"
        )
        pid = server.proc.pid
        try:
            time.sleep(2)  # start-up work (domain summaries) settles
            out: dict = {"rss_after_start_mb": rss_mb(pid)}
            out["rss_after_start_with_children_mb"] = tree_rss_mb(pid)
            ids, uploads = [], {}
            with httpx.Client(base_url=server.base_url, timeout=3600) as client:
                for name, data in docs.items():
                    t0 = time.monotonic()
                    r = client.post(
                        "/api/documents/upload",
                        files={"file": (name, data, "text/markdown")},
                        data={"category": "hostile"},
                    )
                    body = r.json() if r.headers.get("content-type", "").startswith("app") else {}
                    doc = (body.get("document") or {}) if isinstance(body, dict) else {}
                    uploads[name] = {
                        "status": r.status_code,
                        "seconds": round(time.monotonic() - t0, 1),
                        "chunks": (body.get("result") or {}).get("chunks"),
                        "rss_after_mb": rss_mb(pid),
                    }
                    if doc.get("docId"):
                        ids.append(doc["docId"])
                out["uploads"] = uploads
                out["rss_after_uploads_mb"] = rss_mb(pid)
                deletes = [client.delete(f"/api/documents/{i}").status_code for i in ids]
            time.sleep(1)
            out["deletes"] = deletes
            out["rss_after_deletes_mb"] = rss_mb(pid)
            out["after_deletes_over_start"] = round(
                out["rss_after_deletes_mb"] / out["rss_after_start_mb"], 3
            )
            return out
        finally:
            server.stop()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--line-mb", type=float, default=5.0, help="the single line's size")
    ap.add_argument("--depth", type=int, default=3000, help="levels of the nested list")
    ap.add_argument("--chinese-mb", type=float, default=2.0, help="the Chinese document's size")
    ap.add_argument("--rev", help="also measure this commit first (e.g. main)")
    ap.add_argument("--smoke", action="store_true", help="toy sizes: does it run (CI), no targets")
    args = ap.parse_args()
    if args.smoke:
        args.line_mb, args.depth, args.chinese_mb = 0.05, 300, 0.02
    docs = hostile_documents(args.line_mb, args.depth, args.chinese_mb)
    out: dict = {
        "bench": "memory",
        "documents_bytes": {k: len(v) for k, v in docs.items()},
    }
    if args.rev:
        with tempfile.TemporaryDirectory(prefix="bench-memory-rev-") as tmp:
            out[f"rev_{args.rev}"] = measure(docs, extract(args.rev, Path(tmp)), args.smoke)
    cur = out["current"] = measure(docs, None, args.smoke)
    out["targets"] = {
        "rss_after_start_le_1GB": cur["rss_after_start_mb"] <= TARGET_START_MB,
        "after_deletes_within_15pct_of_start": cur["after_deletes_over_start"] <= 1 + TARGET_RETURN,
        "every_upload_and_delete_answered": all(u["status"] == 201 for u in cur["uploads"].values())
        and all(d == 200 for d in cur["deletes"]),
    }
    out["all_targets_met"] = all(out["targets"].values())
    if args.smoke:
        out["smoke"] = True
    print(json.dumps(out, ensure_ascii=False, indent=2))


if __name__ == "__main__":
    main()
