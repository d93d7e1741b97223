"""Chat sessions under load: N concurrent ``POST /api/chat`` (offline model) against one server on
the embedded defaults; sessions/s and latency percentiles; every session recorded exactly once.

(The multi-worker variant on MariaDB + Milvus Lite server runs in ``tests/test_scale.py``.)
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import tempfile
import time
from pathlib import Path

import httpx
from _server import SMOKE_RUNBOOKS, start_server

QUESTIONS = [
    "ERR_TIMEOUT 是什么意思",
    "HikariCP 连接池超时怎么办",
    "Flyway checksum mismatch 怎么修",
    "maxmemory-policy 怎么选",
    "Spring AI @Tool 怎么写",
    "故障定级 P0 标准",
]


async def run(base: str, n: int) -> dict:
    async def one(client: httpx.AsyncClient, i: int) -> tuple[int, float, str]:
        t0 = time.perf_counter()
        r = await client.post("/api/chat", json={"question": QUESTIONS[i % len(QUESTIONS)]})
        return r.status_code, time.perf_counter() - t0, r.json().get("sessionId", "")

    async with httpx.AsyncClient(
        base_url=base, timeout=600, limits=httpx.Limits(max_connections=n)
    ) as client:
        t0 = time.perf_counter()
        results = await asyncio.gather(*(one(client, i) for i in range(n)))
        wall = time.perf_counter() - t0
        listing = (await client.get("/api/sessions", params={"pageSize": 200})).json()
    lat = sorted(t for _, t, _ in results)
    ids = [sid for _, _, sid in results]
    recorded = sum(1 for s in listing["items"] if s["sessionId"] in set(ids))
    return {
        "sessions": n,
        "wall_s": round(wall, 2),
        "sessions_per_s": round(n / wall, 2),
        "p50_s": round(statistics.median(lat), 3),
        "p99_s": round(lat[int(0.99 * (n - 1))], 3),
        "non_200": sum(1 for s, _, _ in results if s != 200),
        "recorded_once": recorded == n == len(set(ids)),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--sessions", type=int, default=50)
    ap.add_argument("--smoke", action="store_true", help="toy sizes: does it run (CI)")
    args = ap.parse_args()
    runbooks = SMOKE_RUNBOOKS if args.smoke else None
    if args.smoke:
        args.sessions = 3
    with tempfile.TemporaryDirectory(prefix="bench-sessions-") as tmp:
        server = start_server(Path(tmp), runbooks=runbooks, LOG_LEVEL="WARNING")
        try:
            asyncio.run(run(server.base_url, 6))  # warm-up
            result = asyncio.run(run(server.base_url, args.sessions))
        finally:
            server.stop()
    doc = {"bench": "chat_sessions_sqlite", **result, **({"smoke": True} if args.smoke else {})}
    print(json.dumps(doc, ensure_ascii=False, indent=2))


if __name__ == "__main__":
    main()
