"""A server's start: wall seconds and CPU-seconds from ``python -m server`` to ``/healthz`` ok.

Two starts per round and variant: ``first`` on a fresh data folder (migrations, the first import of
the shipped runbooks, which carry their vectors: nothing is embedded) and ``restart`` on the same
folder (what a user's restart and most of the tests' servers pay). CPU = user + system time of the
server's process group at the moment it is ready, children included. Each round starts with an
empty cache folder (``SUPERBIZ_CACHE_DIR``): a first start is a machine's first; the restart sees
what the first left there (the bf16 probe's verdict).

``--before REV`` also runs the tree at ``REV`` (extracted with ``git archive``, this venv), the
variants alternating round by round so both see the same load. Prints one JSON document.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._common import machine, ratio, seed_tree  # noqa: E402
from bench._server import ROOT, SMOKE_RUNBOOKS, start_server  # noqa: E402

FIRST_START_TARGET_S = 60  # issue 22: a user's first start
CLK_TCK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def group_cpu_s(pgid: int) -> float:
    """User + system seconds of every live process in ``pgid``, with their reaped children."""
    total = 0
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid:  # fields after the name: state, ppid, pgrp, …
            total += sum(int(x) for x in fields[11:15])  # utime stime cutime cstime
    return total / CLK_TCK


def one_start(work: Path, root: Path, runbooks: tuple[str, ...] | None, cache: Path) -> dict:
    server = start_server(
        work, runbooks=runbooks, root=root, poll_s=0.1, SUPERBIZ_CACHE_DIR=str(cache)
    )
    try:
        cpu = group_cpu_s(server.proc.pid)
    finally:
        server.stop()
    probe = "remembered from an earlier probe" in (work / "server.log").read_text(errors="replace")
    return {"wall_s": server.ready_s, "cpu_s": round(cpu, 2), "probe_cached": probe}


def summary(runs: list[dict]) -> dict:
    walls, cpus = [r["wall_s"] for r in runs], [r["cpu_s"] for r in runs]
    return {
        "wall_s_median": round(statistics.median(walls), 2),
        "cpu_s_median": round(statistics.median(cpus), 2),
        "cpu_s_min": min(cpus),
        "runs": runs,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--before", default="", help="git revision also measured, as 'before'")
    ap.add_argument("--smoke", action="store_true", help="1 round, 3 runbooks")
    args = ap.parse_args()
    rounds = 1 if args.smoke else args.rounds
    runbooks = SMOKE_RUNBOOKS if args.smoke else None
    trees = {"current": ROOT}
    if args.before:
        tree = seed_tree(args.before)
        if tree is None:
            sys.exit(f"cannot extract {args.before}")
        trees = {"before": tree, **trees}
    runs: dict[str, dict[str, list[dict]]] = {v: {"first": [], "restart": []} for v in trees}
    with tempfile.TemporaryDirectory(prefix="bench-start-") as tmp:
        for i in range(rounds):
            # Alternating order: neither variant always runs on the warmer page cache.
            order = list(trees) if i % 2 == 0 else list(reversed(trees))
            for variant in order:
                work, cache = Path(tmp) / f"{variant}-{i}", Path(tmp) / f"cache-{variant}-{i}"
                for kind in ("first", "restart"):
                    result = one_start(work, trees[variant], runbooks, cache)
                    runs[variant][kind].append(result)
                    print(f"{variant} {kind} {i}: {result}", file=sys.stderr, flush=True)
                shutil.rmtree(work, ignore_errors=True)
    out: dict = {"machine": machine(), "rounds": rounds, "smoke": args.smoke}
    out.update({v: {k: summary(r) for k, r in kinds.items()} for v, kinds in runs.items()})
    if "before" in trees:
        out["ratios"] = {
            f"{kind}_cpu_before_over_current": ratio(
                out["before"][kind]["cpu_s_median"], out["current"][kind]["cpu_s_median"]
            )
            for kind in ("first", "restart")
        }
    first = max(r["wall_s"] for r in runs["current"]["first"])
    out["targets"] = {"first_start_s": FIRST_START_TARGET_S, "first_start_met": first <= 60}
    out["all_targets_met"] = out["targets"]["first_start_met"]
    out["load_average_1m"] = round(os.getloadavg()[0], 2)
    out["finished_at"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
