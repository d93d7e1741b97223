"""HTTP: ``POST /api/knowledge/lookup`` sustained on loopback by 8 concurrent clients (bounded run),
p50/p99 and requests/s; the server's resident memory after start-up and after 1,000 lookups.

The server is the real ``python -m server`` (embedded defaults, sample knowledge base) in its own
process; the load generator is this process (httpx, asyncio). Prints one JSON document.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
import time
from pathlib import Path

import httpx
from _server import start_server

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


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return round(int(line.split()[1]) / 1024, 1)
    return float("nan")


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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--requests", type=int, default=1000)
    ap.add_argument("--concurrency", type=int, default=8)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-http-") as tmp:
        server = start_server(Path(tmp), LOG_LEVEL="WARNING")
        try:
            time.sleep(2)  # let start-up work (domain summaries, caches) settle
            rss_start = rss_mb(server.proc.pid)
            asyncio.run(load(server.base_url, 50, args.concurrency))  # warm-up
            result = asyncio.run(load(server.base_url, args.requests, args.concurrency))
            result |= {
                "rss_after_start_mb": rss_start,
                f"rss_after_{args.requests + 50}_lookups_mb": rss_mb(server.proc.pid),
            }
        finally:
            server.stop()
    print(json.dumps({"bench": "http_lookup", **result}, ensure_ascii=False, indent=2))


if __name__ == "__main__":
    main()
