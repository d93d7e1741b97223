"""Crash and data-loss helpers for the recovery tests: extra runbooks so an import lasts long enough
to be interrupted, a kill -9 by PID, and the server's own SQLite rows read from outside it."""

from __future__ import annotations

import os
import signal
import sqlite3
import time
from collections.abc import Callable
from pathlib import Path

import httpx

from tests.support.processes import Server

SECTION = (
    "## Step {n}: check the {thing}\n\n"
    "Look at the {thing} of service {name} first. If it reports {code}, restart the {thing} "
    "worker, then watch the error rate for five minutes before closing the incident.\n\n"
)
THINGS = ("queue", "cache", "disk", "pool", "scheduler", "gateway", "index", "replica")


def runbook(i: int, sections: int = 6) -> bytes:
    """A small English runbook with one keyword no other document has: ``SYNTH_ERR_<i>``."""
    name, code = f"svc-{i:03d}", f"SYNTH_ERR_{i:03d}"
    head = (
        f"---\ntitle: Synthetic runbook {i:03d}\nkeywords: [{code}]\n"
        f"summary: What to do when {name} reports {code}.\ncategory: synthetic\n"
        f"covers: [{code}]\nwhen_to_retrieve: {code} is reported by {name}\n---\n"
        f"# Synthetic runbook {i:03d}\n\nWhat to do when {name} reports {code}.\n\n"
    )
    body = "".join(
        SECTION.format(n=n, thing=THINGS[(i + n) % len(THINGS)], name=name, code=code)
        for n in range(sections)
    )
    return (head + body).encode()


def add_runbooks(kb_dir: Path, count: int) -> list[str]:
    """Write ``count`` synthetic runbooks under ``kb_dir/synthetic``; their relative paths."""
    folder = kb_dir / "synthetic"
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for i in range(count):
        (folder / f"runbook-{i:03d}.md").write_bytes(runbook(i))
        paths.append(f"synthetic/runbook-{i:03d}.md")
    return paths


def kill_9(server: Server) -> None:
    """SIGKILL the server process itself, by its PID: no shutdown code runs."""
    os.kill(server.proc.pid, signal.SIGKILL)
    server.proc.wait(timeout=30)


def statuses(db_file: Path) -> dict[str, str]:
    """file_path → status of every ``api_document`` row, read with a separate connection."""
    with sqlite3.connect(f"file:{db_file}?mode=ro", uri=True, timeout=30) as conn:
        return dict(conn.execute("SELECT file_path, status FROM api_document").fetchall())


def wait_for(check: Callable[[], bool], timeout: float, what: str, interval: float = 0.05) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


def all_documents(base_url: str) -> list[dict]:
    out: list[dict] = []
    page = 1
    while True:
        got = httpx.get(
            f"{base_url}/api/documents", params={"page": page, "pageSize": 200}, timeout=30
        ).json()
        out += got["items"]
        if len(out) >= got["total"] or not got["items"]:
            return out
        page += 1


def chunks_disagreeing(base_url: str, docs: list[dict]) -> list[str]:
    """Documents whose stored chunk count differs from the chunks the vector store holds."""
    wrong = []
    for d in docs:
        detail = httpx.get(f"{base_url}/api/documents/{d['docId']}", timeout=30).json()
        if len(detail["chunks"]) != detail["chunkCount"]:
            wrong.append(f"{d['filePath']}: {detail['chunkCount']} vs {len(detail['chunks'])}")
    return wrong
