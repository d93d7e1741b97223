"""The real server, first start to load: ``python -m server`` on a fresh data folder with the shipped
``knowledge_base/`` (30 runbooks), once per embedding model in the same run (``current`` = the
default multilingual-e5-small, ``minilm`` = the packaged MiniLM).

Per model: seconds from the process' start until it is ready to answer every lookup (``/healthz``
"ok": the first import is done; then every query of the mix answered 200 and found), its resident
memory after start-up, then ``POST /api/knowledge/lookup`` sustained on loopback by 8 concurrent
clients (bounded run, after 50 warm-up requests): p50/p99, requests/s, memory after the run.

Targets (issue 17), for the default model: first start ready ≤ 60 s; RSS after start ≤ 1 GB.
The load generator is this process (httpx, asyncio). Prints one JSON document.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
import time
from pathlib import Path

import httpx
from _server import SMOKE_RUNBOOKS, start_server

QUERIES = [
    "ERR_TIMEOUT",
    "HikariCP 连接池超时",
    "database connection pool timeout",
    "redis eviction policy when memory is full",
    "how do I roll back a failed schema migration",
    "Flyway checksum mismatch",
    "支付 请求 超时 重试",
    "incident severity levels and who to page",
    "Spring AI tool description best practice",
    "maxmemory-policy",
    "连接池耗尽 排查",
    "OOM command not allowed",
]


MODELS = {"current": {}, "minilm": {"RETRIEVAL__EMBEDDING__MODEL": "all-MiniLM-L6-v2"}}
TARGET_READY_S, TARGET_RSS_MB = 60.0, 1024.0


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return round(int(line.split()[1]) / 1024, 1)
    return float("nan")


def tree_rss_mb(pid: int) -> float:
    """The server and its children (Milvus Lite's engine runs in one)."""
    total, todo = 0.0, [pid]
    while todo:
        p = todo.pop()
        try:
            total += rss_mb(p)
            children = Path(f"/proc/{p}/task/{p}/children").read_text().split()
        except OSError:
            continue
        todo += [int(c) for c in children]
    return round(total, 1)


def answers_every_lookup(base: str) -> dict:
    """Each query of the mix once: all answered (200), none saying the import is still running."""
    codes, found = [], 0
    with httpx.Client(base_url=base, timeout=120) as client:
        for q in QUERIES:
            r = client.post("/api/knowledge/lookup", json={"query": q})
            codes.append(r.status_code)
            found += bool(r.status_code == 200 and (r.json().get("result") or {}).get("found"))
    return {"queries": len(QUERIES), "answered_200": codes.count(200), "found": found}


def pct(values: list[float], p: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, int(round((len(s) - 1) * p / 100)))]


async def load(base: str, total: int, concurrency: int) -> dict:
    latencies: list[float] = []
    errors: dict[int, int] = {}
    counter = iter(range(total))

    async def worker(client: httpx.AsyncClient) -> None:
        for i in counter:
            t0 = time.perf_counter()
            r = await client.post(
                "/api/knowledge/lookup", json={"query": QUERIES[i % len(QUERIES)]}
            )
            latencies.append(time.perf_counter() - t0)
            if r.status_code != 200:
                errors[r.status_code] = errors.get(r.status_code, 0) + 1

    async with httpx.AsyncClient(
        base_url=base, timeout=60, limits=httpx.Limits(max_connections=concurrency)
    ) as client:
        t0 = time.perf_counter()
        await asyncio.gather(*(worker(client) for _ in range(concurrency)))
        wall = time.perf_counter() - t0
    ms = [x * 1000 for x in latencies]
    return {
        "requests": len(ms),
        "concurrency": concurrency,
        "wall_s": round(wall, 2),
        "requests_per_s": round(len(ms) / wall, 1),
        "p50_ms": round(pct(ms, 50), 1),
        "p99_ms": round(pct(ms, 99), 1),
        "max_ms": round(max(ms), 1),
        "errors": errors,
    }


def one_model(name: str, env: dict[str, str], args: argparse.Namespace) -> dict:
    runbooks = SMOKE_RUNBOOKS if args.smoke else None
    with tempfile.TemporaryDirectory(prefix=f"bench-http-{name}-") as tmp:
        server = start_server(Path(tmp), runbooks=runbooks, LOG_LEVEL="WARNING", **env)
        try:
            ready = answers_every_lookup(server.base_url)
            time.sleep(2)  # let start-up work (domain summaries, caches) settle
            rss_start = rss_mb(server.proc.pid)
            tree_start = tree_rss_mb(server.proc.pid)
            asyncio.run(load(server.base_url, args.warmup, args.concurrency))
            result = asyncio.run(load(server.base_url, args.requests, args.concurrency))
            return {
                "first_start_ready_s": server.ready_s,
                "first_start_lookups": ready,
                "rss_after_start_mb": rss_start,
                "rss_after_start_with_children_mb": tree_start,
                **result,
                f"rss_after_{args.requests + args.warmup}_lookups_mb": rss_mb(server.proc.pid),
            }
        finally:
            server.stop()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--requests", type=int, default=1000)
    ap.add_argument("--warmup", type=int, default=50)
    ap.add_argument("--concurrency", type=int, default=8)
    ap.add_argument("--models", default=",".join(MODELS), help="default: %(default)s")
    ap.add_argument("--smoke", action="store_true", help="toy sizes: does it run (CI), no targets")
    args = ap.parse_args()
    if args.smoke:
        args.requests, args.warmup = 16, 4
    names = [m for m in args.models.split(",") if m]
    out: dict = {"bench": "http_lookup", "runbooks": "smoke subset" if args.smoke else "all"}
    for name in names:
        out[name] = one_model(name, MODELS[name], args)
    cur = out.get("current")
    if cur and "minilm" in out:
        out["ratios_current_over_minilm"] = {
            k: round(cur[k] / out["minilm"][k], 2)
            for k in ("first_start_ready_s", "rss_after_start_mb", "p50_ms")
            if out["minilm"][k]
        }
    if cur:
        out["targets"] = {
            "first_start_ready_le_60s": cur["first_start_ready_s"] <= TARGET_READY_S
            and cur["first_start_lookups"]["answered_200"] == len(QUERIES),
            "rss_after_start_le_1GB": cur["rss_after_start_mb"] <= TARGET_RSS_MB,
        }
        out["all_targets_met"] = all(out["targets"].values())
    if args.smoke:
        out["smoke"] = True
    print(json.dumps(out, ensure_ascii=False, indent=2))


if __name__ == "__main__":
    main()
