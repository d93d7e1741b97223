"""Lookups under overload: ``POST /api/knowledge/lookup`` offered at a fixed rate (open loop: a new
request every 1/rate s whether or not earlier ones were answered), distinct queries, against the
real server (``python -m server``, embedded defaults, the shipped runbooks).

Target (issue 20): 200 lookups/s offered for 30 s, every request answered within 5 s, either 200
or 503 with Retry-After (admission control, ``api/admission.py``). Prints one JSON document:
offered rate, counts per status, how many 503s carried Retry-After, p50/p99/max latency (from the
moment each request was due, ``_loadgen.py``), requests unfinished (no answer within the client's
timeout), and whether the targets were met.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import sys
import tempfile
from collections import Counter
from pathlib import Path

import httpx
from _loadgen import Result, offer
from _server import SMOKE_RUNBOOKS, start_server

WORDS = [
    "ERR_TIMEOUT",
    "HikariCP 连接池超时",
    "database connection pool timeout",
    "redis eviction policy when memory is full",
    "Flyway checksum mismatch",
    "支付 请求 超时 重试",
    "OOM command not allowed",
    "连接池耗尽 排查",
    "disk pressure on node",
    "certificate expired 证书过期",
]
ANSWER_WITHIN_S = 5.0


def percentile(xs: list[float], p: float) -> float | None:
    if not xs:
        return None
    xs = sorted(xs)
    return round(xs[min(len(xs) - 1, max(0, int(round(p / 100 * len(xs))) - 1))], 1)


def summarize(results: list[Result], offered_s: float, rate: float, duration_s: float) -> dict:
    total = len(results)
    counts = Counter(str(r.status) for r in results)
    answered = [r.ms for r in results if isinstance(r.status, int)]
    shed = [r for r in results if r.status == 503]
    within = sum(1 for r in results if isinstance(r.status, int) and r.ms <= ANSWER_WITHIN_S * 1000)
    return {
        "offered_rate_per_s": rate,
        "achieved_offer_rate_per_s": round(total / offered_s, 1),
        "duration_s": duration_s,
        "requests": total,
        "counts": dict(sorted(counts.items())),
        "served_per_s": round(counts.get("200", 0) / offered_s, 1),
        "503_with_retry_after": sum(1 for r in shed if r.retry_after),
        "unfinished": counts.get("unfinished", 0),
        "answered_within_5s": within,
        "p50_ms": percentile(answered, 50),
        "p99_ms": percentile(answered, 99),
        "max_ms": round(max(answered), 1) if answered else None,
        "p99_ms_of_200": percentile([r.ms for r in results if r.status == 200], 99),
        "p99_ms_of_503": percentile([r.ms for r in shed], 99),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--rate", type=float, default=200.0, help="lookups offered per second")
    ap.add_argument("--duration", type=float, default=30.0, help="seconds of offered load")
    ap.add_argument("--timeout", type=float, default=30.0, help="client timeout per request (s)")
    ap.add_argument("--smoke", action="store_true", help="toy sizes: does it run (CI), no targets")
    args = ap.parse_args()
    # A run stopped by `timeout` or kill still stops its server (the finally below runs).
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    if args.smoke:
        args.rate, args.duration = 40.0, 3.0
    with tempfile.TemporaryDirectory(prefix="bench-overload-") as tmp:
        server = start_server(Path(tmp), runbooks=SMOKE_RUNBOOKS if args.smoke else None)
        try:
            warm = httpx.post(
                f"{server.base_url}/api/knowledge/lookup", json={"query": "x"}, timeout=60
            )
            warm.raise_for_status()
            # Distinct queries: nothing is served from a cache.
            bodies = [
                {"query": f"{WORDS[i % len(WORDS)]} {i}"}
                for i in range(int(args.rate * args.duration))
            ]
            results, offered_s = asyncio.run(
                offer(server.base_url, "/api/knowledge/lookup", bodies, args.rate, args.timeout)
            )
            out = summarize(results, offered_s, args.rate, args.duration)
        finally:
            server.stop()
    statuses_ok = set(out["counts"]) <= {"200", "503"}
    out["targets"] = {
        "every_request_answered_within_5s": out["answered_within_5s"] == out["requests"],
        "only_200_or_503": statuses_ok,
        "every_503_has_retry_after": out["503_with_retry_after"] == out["counts"].get("503", 0),
    }
    out["all_targets_met"] = None if args.smoke else all(out["targets"].values())
    out["smoke"] = args.smoke
    # The same machine runs the load generator; on a shared box its load says how much to trust.
    out["load_average_1m_after"] = round(os.getloadavg()[0], 2)
    out["cpus"] = os.cpu_count()
    print(json.dumps(out, ensure_ascii=False, indent=2))


if __name__ == "__main__":
    main()
