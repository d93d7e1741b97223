"""Checkpoint storage of one long conversation: bytes each turn adds at turn 10 and at turn 400.

One thread, N chat turns through the ``Runner`` (offline model, embedded defaults: SQLite
checkpoints, Milvus Lite, a few shipped runbooks with their shipped vectors), the way ``POST
/api/chat`` runs them. After every turn it reads what the checkpoint store holds: the logical
bytes of every stored checkpoint, blob and write (what the saver serialised) and the file's size
(with its WAL; SQLite reuses freed pages and grows in steps, so it is reported, not judged).

"Bytes per turn at turn T" is the mean growth over the turns ending at T: the first ``--early``
turns, and the last ``--late-window`` turns (default 50: the message list's delta channel writes a
full snapshot every 100 updates, i.e. every 50 turns, so a shorter window would charge a whole
snapshot to a few turns, or none). The largest single turn of that late window is reported too.

Target (issue 20): bytes per turn at turn 400 ≤ 1.5 × bytes per turn at turn 10.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import sqlite3
import sys
import tempfile
import time
from pathlib import Path

import _common  # noqa: F401  (puts the checkout on sys.path, keeps the models offline)
from _server import SMOKE_RUNBOOKS, copy_runbooks

QUESTIONS = [
    "ERR_TIMEOUT 是什么意思",
    "HikariCP 连接池超时怎么办",
    "maxmemory-policy 怎么选",
    "what should I check first when payments fail with ERR_TIMEOUT?",
    "Redis 内存满了先做什么",
    "database connection pool timeout, how to fix",
]
TARGET_RATIO = 1.5


def stored_bytes(path: Path) -> int:
    """What the SQLite saver's tables hold, in bytes (checkpoints, metadata, writes)."""
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        total = 0
        for table, cols in (
            ("checkpoints", ("checkpoint", "metadata")),
            ("writes", ("value",)),
        ):
            expr = " + ".join(f"coalesce(sum(length({c})), 0)" for c in cols)
            total += con.execute(f"SELECT {expr} FROM {table}").fetchone()[0]
        return total
    finally:
        con.close()


def checkpoint_rows(path: Path) -> int:
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return con.execute("SELECT count(*) FROM checkpoints").fetchone()[0]
    finally:
        con.close()


MYSQL_SIZES = (
    "SELECT (SELECT coalesce(sum(length(checkpoint) + length(metadata)), 0) FROM checkpoints)"
    " + (SELECT coalesce(sum(length(`blob`)), 0) FROM checkpoint_blobs)"
    " + (SELECT coalesce(sum(length(`blob`)), 0) FROM checkpoint_writes)"
)


async def mysql_bytes(db) -> int:
    """What AsyncMySaver's tables hold, in bytes (checkpoints, per-channel blobs, writes)."""
    import sqlalchemy as sa

    async with db.engine.connect() as conn:
        return int((await conn.execute(sa.text(MYSQL_SIZES))).scalar() or 0)


def per_turn(series: list[int], turn: int, window: int) -> float:
    """Mean bytes added per turn over the ``window`` turns ending at ``turn`` (1-based)."""
    turn = min(turn, len(series) - 1)
    start = max(0, turn - window)
    return (series[turn] - series[start]) / max(1, turn - start)


async def run(work: Path, turns: int, runbooks: tuple[str, ...], url: str | None) -> dict:
    from services import Services
    from settings import load_settings

    kb = copy_runbooks(work / "knowledge_base", runbooks)
    extra = {"database_url": url} if url else {}
    settings = load_settings(data_dir=work, knowledge_base_dir=kb, **extra)
    svc = await Services.start(settings)
    try:
        from persistence.checkpoint import sqlite_checkpoint_path

        path = sqlite_checkpoint_path(settings.database_url, settings.data_dir)

        async def measure() -> tuple[int, int]:
            if url:
                return await mysql_bytes(svc.db), 0
            wal = path.with_name(path.name + "-wal")
            return stored_bytes(path), path.stat().st_size + (
                wal.stat().st_size if wal.exists() else 0
            )

        runner = svc.runner()
        thread = "bench-long-conversation"
        logical, files = map(list, zip(await measure(), strict=True))
        seconds, failed = [], 0
        for i in range(turns):
            t0 = time.perf_counter()
            result = await runner.run(QUESTIONS[i % len(QUESTIONS)], thread_id=thread)
            seconds.append(time.perf_counter() - t0)
            failed += result.status != "SUCCESS"
            size, file_size = await measure()
            logical.append(size)
            files.append(file_size)
        await runner.drain()
        state = await svc.graphs.chat.aget_state({"configurable": {"thread_id": thread}})
        kept = len(state.values.get("messages") or [])
        rows = 0 if url else checkpoint_rows(path)
    finally:
        await svc.close()
    return {
        "logical": logical,
        "files": files,
        "seconds": seconds,
        "failed": failed,
        "messages_in_state": kept,
        "checkpoint_rows": rows,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--turns", type=int, default=400)
    ap.add_argument("--early", type=int, default=10, help="the early turns averaged")
    ap.add_argument("--late-window", type=int, default=50, help="the last turns averaged")
    ap.add_argument("--smoke", action="store_true", help="toy sizes: does it run (CI)")
    ap.add_argument(
        "--database-url",
        help="an empty MySQL/MariaDB database (mysql+asyncmy://…) instead of the SQLite default",
    )
    args = ap.parse_args()
    if args.smoke:
        args.turns, args.early, args.late_window = 24, 6, 12
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    with tempfile.TemporaryDirectory(prefix="bench-checkpoints-") as tmp:
        r = asyncio.run(run(Path(tmp), args.turns, SMOKE_RUNBOOKS, args.database_url))
    early = per_turn(r["logical"], args.early, args.early)
    late = per_turn(r["logical"], args.turns, args.late_window)
    early_file = per_turn(r["files"], args.early, args.early)
    late_file = per_turn(r["files"], args.turns, args.late_window)
    tail = r["logical"][-args.late_window - 1 :]
    late_max = max(b - a for a, b in zip(tail, tail[1:], strict=False))
    ratio = round(late / early, 3) if early > 0 else float("inf")
    secs = r["seconds"]
    doc = {
        "bench": "checkpoint_growth_" + ("mysql" if args.database_url else "sqlite"),
        "turns": args.turns,
        "early_turns": args.early,
        "late_window": args.late_window,
        "bytes_per_turn_early": round(early),
        "bytes_per_turn_late": round(late),
        "ratio_late_over_early": ratio,
        "largest_late_turn_bytes": late_max,
        "file_bytes_per_turn_early": round(early_file),
        "file_bytes_per_turn_late": round(late_file),
        "stored_bytes_total": r["logical"][-1],
        "file_bytes_total": r["files"][-1],
        "checkpoint_rows": r["checkpoint_rows"],
        "messages_in_state": r["messages_in_state"],
        "turn_seconds_early": round(sum(secs[: args.early]) / args.early, 3),
        "turn_seconds_late": round(sum(secs[-args.early :]) / args.early, 3),
        "failed_turns": r["failed"],
        "target_ratio": TARGET_RATIO,
        "all_targets_met": ratio <= TARGET_RATIO and r["failed"] == 0,
        **({"smoke": True} if args.smoke else {}),
    }
    print(json.dumps(doc, ensure_ascii=False, indent=2))


if __name__ == "__main__":
    main()
