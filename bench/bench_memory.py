"""The real server's resident memory after large hostile documents (issues 17 and 20).

``python -m server`` on a fresh data folder with the shipped ``knowledge_base/``: its RSS after
start-up, after uploading large hostile documents one by one through ``POST
/api/documents/upload`` (a single line of several MB, a list nested thousands of levels deep, a
Chinese document of MBs), and after deleting them again. Memory that an upload's parse, chunks,
embedding batches and vector-store payloads leave behind shows as "after deletes" staying above
"after start".

``--rev REV`` also measures that commit (extracted with ``git archive``, run with this venv, its
code first on the path), in the same run, before the working tree; ``--variant NAME:KEY=VALUE,…``
the working tree with those environment variables (e.g. ``glibc-default:MALLOC_ARENA_MAX=64``:
glibc's own number of heaps, which ``cap_heaps`` leaves alone when set); ``--rounds N`` measures
every variant N times, alternating. Each code tree gets a private cache folder holding its bf16
probe's verdict, so every start is a restart (``warm_cache``). Targets (the median of "current"):
RSS after start ≤ 1 GB; after the deletes within 15 % of after start. Prints one JSON document.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
from _server import CODE_FIRST, PYTHON, ROOT, SMOKE_RUNBOOKS, start_server
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
    dest.mkdir(parents=True, exist_ok=True)
    archive = subprocess.run(["git", "archive", rev], cwd=ROOT, capture_output=True, check=True)
    subprocess.run(["tar", "-x", "-C", str(dest)], input=archive.stdout, check=True)
    return dest


WARM_VERDICT = (
    f"{CODE_FIRST}; from retrieval.l1.e5_local import E5Embeddings; E5Embeddings().encoder"
)


def warm_cache(code_root: Path, cache: Path) -> Path:
    """``cache`` holding the bf16 probe's verdict for ``code_root``'s encoder, as after a first
    start: every measured start is then a restart. (In the user's cache folder the first server
    of a new encoder code probes and the others do not, one more difference between variants.)
    A revision without the verdict cache leaves it empty, which changes nothing for it."""
    cache.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "SUPERBIZ_CACHE_DIR": str(cache), "PYTHONPATH": str(code_root)}
    subprocess.run([PYTHON, "-c", WARM_VERDICT, str(code_root)], env=env, capture_output=True)
    return cache


def measure(
    docs: dict[str, bytes], code_root: Path, cache: Path, env: dict[str, str], args: Any
) -> dict:
    runbooks = SMOKE_RUNBOOKS if args.smoke else None
    with tempfile.TemporaryDirectory(prefix="bench-memory-") as tmp:
        server = start_server(
            Path(tmp),
            runbooks=runbooks,
            root=code_root,
            LOG_LEVEL="WARNING",
            SUPERBIZ_CACHE_DIR=str(cache),
            **env,
        )
        pid = server.proc.pid
        try:
            time.sleep(2)  # start-up work (domain summaries) settles
            out: dict = {"rss_after_start_mb": rss_mb(pid)}
            out["rss_after_start_with_children_mb"] = tree_rss_mb(pid)
            ids, uploads = [], {}
            with httpx.Client(base_url=server.base_url, timeout=3600) as client:
                if args.lookup_after_start:  # reported beside, "after start" stays what it is
                    client.post("/api/knowledge/lookup", json={"query": "redis memory full"})
                    out["rss_after_one_lookup_mb"] = rss_mb(pid)
                if args.warm_up:  # also reported beside: the first embedding's one-time cost
                    out["rss_after_warm_up_mb"] = warm_up(client, pid)
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
                out["upload_seconds"] = round(sum(u["seconds"] for u in uploads.values()), 1)
                out["rss_after_uploads_mb"] = rss_mb(pid)
                deletes = [client.delete(f"/api/documents/{i}").status_code for i in ids]
            time.sleep(1)
            out["deletes"] = deletes
            out["rss_after_deletes_mb"] = rss_mb(pid)
            out["after_deletes_over_start"] = round(
                out["rss_after_deletes_mb"] / out["rss_after_start_mb"], 3
            )
            if args.warm_up:
                out["after_deletes_over_warm_up"] = round(
                    out["rss_after_deletes_mb"] / out["rss_after_warm_up_mb"], 3
                )
            return out
        finally:
            server.stop()


def warm_up(client: httpx.Client, pid: int) -> float:
    """Uploads and deletes one small runbook; the RSS after. The shipped runbooks start from their
    shipped vectors, so a fresh server has never embedded a document: its first upload maps model
    pages and grows the allocators once (~50 MB measured), whatever the document's size."""
    small = hostile_documents(0.05, 300, 0.02)["chinese.md"]
    r = client.post(
        "/api/documents/upload",
        files={"file": ("warm-up.md", small, "text/markdown")},
        data={"category": "hostile"},
    )
    doc_id = ((r.json().get("document") or {}) if r.status_code < 300 else {}).get("docId")
    if doc_id:
        client.delete(f"/api/documents/{doc_id}")
    time.sleep(1)
    return rss_mb(pid)


def parse_variant(spec: str) -> tuple[str, dict[str, str]]:
    """``NAME[:KEY=VALUE[,KEY=VALUE…]]``: the working tree run with those environment variables."""
    name, _, pairs = spec.partition(":")
    return name, dict(kv.split("=", 1) for kv in pairs.split(",") if kv)


def summary(runs: list[dict]) -> dict:
    ratios = [r["after_deletes_over_start"] for r in runs]
    return {
        "after_deletes_over_start": ratios,
        "median": round(statistics.median(ratios), 3),
        "rss_after_start_mb": [r["rss_after_start_mb"] for r in runs],
        "rss_after_deletes_mb": [r["rss_after_deletes_mb"] for r in runs],
        "upload_seconds": [r["upload_seconds"] for r in runs],
        **(
            {"after_deletes_over_warm_up": [r["after_deletes_over_warm_up"] for r in runs]}
            if runs and "after_deletes_over_warm_up" in runs[0]
            else {}
        ),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--line-mb", type=float, default=5.0, help="the single line's size")
    ap.add_argument("--depth", type=int, default=3000, help="levels of the nested list")
    ap.add_argument("--chinese-mb", type=float, default=2.0, help="the Chinese document's size")
    ap.add_argument("--rev", help="also measure this commit, before the working tree (e.g. main)")
    ap.add_argument(
        "--variant",
        action="append",
        default=[],
        help="NAME:KEY=VALUE,…: also the working tree with these environment variables, e.g. "
        "glibc-default:MALLOC_ARENA_MAX=64 (repeatable)",
    )
    ap.add_argument("--rounds", type=int, default=1, help="each variant this often, alternating")
    ap.add_argument(
        "--lookup-after-start", action="store_true", help="also RSS after one lookup (reported)"
    )
    ap.add_argument(
        "--warm-up",
        action="store_true",
        help="upload and delete a small runbook first; also report the ratio to RSS after it",
    )
    ap.add_argument("--smoke", action="store_true", help="toy sizes: does it run (CI), no targets")
    args = ap.parse_args()
    if args.smoke:
        args.line_mb, args.depth, args.chinese_mb = 0.05, 300, 0.02
    docs = hostile_documents(args.line_mb, args.depth, args.chinese_mb)
    out: dict = {
        "bench": "memory",
        "documents_bytes": {k: len(v) for k, v in docs.items()},
    }
    with tempfile.TemporaryDirectory(prefix="bench-memory-rev-") as tmp:
        variants = [parse_variant(v) for v in args.variant] + [("current", {})]
        roots = {name: ROOT for name, _ in variants}
        if args.rev:
            name = f"rev_{args.rev}"
            roots[name] = extract(args.rev, Path(tmp) / "tree")
            variants.insert(0, (name, {}))
        caches = {
            r: warm_cache(r, Path(tmp) / f"cache-{i}") for i, r in enumerate({*roots.values()})
        }
        runs: dict[str, list[dict]] = {name: [] for name, _ in variants}
        for _ in range(args.rounds):
            for name, env in variants:
                root = roots[name]
                got = measure(docs, root, caches[root], env, args)
                runs[name].append(got)
                print(name, got["after_deletes_over_start"], got["upload_seconds"], file=sys.stderr)
    for name, got in runs.items():
        out[name] = got[0] if len(got) == 1 else got
    if args.rounds > 1 or len(runs) > 1:
        out["summary"] = {name: summary(got) for name, got in runs.items()}
    cur = runs["current"]
    out["targets"] = {
        "rss_after_start_le_1GB": all(r["rss_after_start_mb"] <= TARGET_START_MB for r in cur),
        "after_deletes_within_15pct_of_start": statistics.median(
            r["after_deletes_over_start"] for r in cur
        )
        <= 1 + TARGET_RETURN,
        "every_upload_and_delete_answered": all(
            all(u["status"] == 201 for u in r["uploads"].values())
            and all(d == 200 for d in r["deletes"])
            for r in cur
        ),
    }
    out["all_targets_met"] = all(out["targets"].values())
    if args.smoke:
        out["smoke"] = True
    print(json.dumps(out, ensure_ascii=False, indent=2))


if __name__ == "__main__":
    main()
