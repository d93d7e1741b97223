"""`make serve` in a clean checkout brings the server up on the embedded defaults.

This one test is about the shipped samples: a newcomer's first start imports every runbook in the
checkout's ``knowledge_base/``, however many there are."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path

import httpx
import pytest

from tests.support.paths import ROOT
from tests.support.processes import free_port, stop_process

pytestmark = pytest.mark.slow  # `make serve` in a copy of the checkout
RUNBOOK_SUFFIXES = (".md", ".markdown", ".txt")  # what an import picks up


def shipped_runbooks(checkout: Path) -> list[Path]:
    kb = checkout / "knowledge_base"
    return [
        p
        for p in kb.rglob("*")
        if p.is_file() and p.suffix.lower() in RUNBOOK_SUFFIXES and not p.name.startswith(".")
    ]


def clean_checkout(dest: Path) -> Path:
    """Copy what git would check out (tracked + not-ignored files), sharing the installed venv."""
    files = (
        subprocess.run(
            ["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
            cwd=ROOT,
            capture_output=True,
            check=True,
        )
        .stdout.decode()
        .split("\0")
    )
    for rel in filter(None, files):
        src = ROOT / rel
        if src.is_file():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / rel)
    (dest / ".venv").symlink_to(ROOT / ".venv")
    # The install stamp must stay newer than the copied pyproject.toml, or make would reinstall.
    stamp = ROOT / ".venv" / ".installed"
    if stamp.exists():
        t = stamp.stat().st_mtime - 10
        os.utime(dest / "pyproject.toml", (t, t))
    return dest


def test_make_serve_answers_healthz(tmp_path: Path) -> None:
    if shutil.which("make") is None:
        pytest.skip("GNU make is not installed")
    work = clean_checkout(tmp_path / "checkout")
    assert not (work / "data").exists()
    runbooks = shipped_runbooks(work)
    assert len(runbooks) >= 6, runbooks
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DATABASE_URL", "MILVUS_URI"))}
    env.update(PORT=str(port), CONFIG_FILE=str(work / "config.yaml"))
    log = (tmp_path / "serve.log").open("wb")
    proc = subprocess.Popen(
        ["make", "serve"],
        cwd=work,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 240
        body = None
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                r = httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=2)
                if r.status_code == 200 and r.json()["status"] != "importing":
                    body = r.json()  # serving, and the first import (in the background) is done
                    if body["status"] == "ok":  # a check that a busy machine slowed may lag
                        break
            except httpx.HTTPError:
                pass
            time.sleep(0.5)
        assert body is not None, (tmp_path / "serve.log").read_text(errors="replace")[-3000:]
        assert body["database"] == {
            "kind": "sqlite",
            "ok": True,
            "reachable": True,
            "writable": True,
        }
        assert body["vectorStore"]["kind"] == "milvus-lite"
        assert body["status"] == "ok" and body["documents"] == len(runbooks), (
            body.get("problems"),
            body,
            len(runbooks),
        )  # first start ingested every shipped runbook
        assert body["chatModel"] == "offline"
        assert (work / "data" / "superbiz.db").exists()
        assert len(shipped_runbooks(work / "data")) == len(runbooks)  # seeded into DATA_DIR
    finally:
        stop_process(proc)
    assert proc.returncode is not None
