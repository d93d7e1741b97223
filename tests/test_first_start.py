"""A newcomer's first start, as a real process on a fresh clone with the defaults: the console
answers within seconds, the first import of the shipped runbooks runs in the background
(``/healthz`` says ``importing``, lookups say they see part of the knowledge base), every piece of
state lands under ``./data``, and uploads and deletes leave ``git status`` clean."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import httpx
import pytest

from tests.support.processes import SCRUBBED, free_port, python_bin, stop_process
from tests.test_serve import clean_checkout, shipped_runbooks

pytestmark = pytest.mark.slow  # a real server importing the shipped knowledge base
ANSWERS_WITHIN_S = 15
NOTE = "知识库首次导入进行中"
OWN_RUNBOOK = (
    "---\ntitle: service-{i} 延迟升高\nkeywords: [SVC{i}_LATENCY]\n---\n# service-{i} 延迟升高\n\n"
    + "".join(
        f"## 第 {{i}} 类原因 {n}\n\n检查 service-{{i}} 的第 {n} 个依赖的连接数、线程池与慢调用。\n\n"
        for n in range(12)
    )
)
RUNBOOK = "---\ntitle: 磁盘满\nkeywords: [DISK_FULL_FS]\n---\n# 磁盘满\n\n清理 /var/log。\n"


def git(work: Path, *args: str) -> str:
    out = subprocess.run(["git", *args], cwd=work, capture_output=True, text=True, check=True)
    return out.stdout


def fresh_clone(tmp_path: Path, *, own_runbooks: int = 0) -> Path:
    """A clone; ``own_runbooks`` adds an operator's runbooks to its base (no shipped vectors)."""
    work = clean_checkout(tmp_path / "checkout")
    for i in range(own_runbooks):
        path = work / "knowledge_base" / "ops" / f"service-{i}.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(OWN_RUNBOOK.format(i=i), encoding="utf-8")
    git(work, "init", "-q")
    git(work, "add", "-A")
    git(work, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "clone")
    return work


def default_env(work: Path, port: int) -> dict[str, str]:
    """The defaults: no store setting, no DATA_DIR."""
    env = {k: v for k, v in os.environ.items() if not k.startswith((*SCRUBBED, "DATA_DIR"))}
    env.pop("KNOWLEDGE_BASE_DIR", None)
    env.update(
        PORT=str(port),
        CONFIG_FILE=str(work / "absent-config.yaml"),
        HF_HUB_OFFLINE="1",
        TRANSFORMERS_OFFLINE="1",
    )
    return env


def serve(work: Path, port: int, log: Path) -> subprocess.Popen[bytes]:
    env = default_env(work, port)
    with log.open("wb") as out:
        return subprocess.Popen(
            [python_bin(), "-m", "server"],
            cwd=work,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )


def wait_for_page(base: str, proc: subprocess.Popen[bytes], t0: float, log: Path) -> float:
    while time.monotonic() - t0 < 120:
        assert proc.poll() is None, log.read_text(errors="replace")[-3000:]
        try:
            if httpx.get(f"{base}/", timeout=2).status_code == 200:
                return time.monotonic() - t0
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    raise AssertionError("the console never answered /")


def follow_first_import(base: str, t0: float) -> dict:
    """Poll /healthz until it says ok, looking things up while it says importing."""
    seen: dict = {"statuses": [], "noted_lookups": 0, "progress": set(), "embedding": 0}
    while time.monotonic() - t0 < 600:
        r = httpx.get(f"{base}/healthz", timeout=10)
        body = r.json()
        status = body["status"]
        if not seen["statuses"] or seen["statuses"][-1][0] != status:
            seen["statuses"].append((status, r.status_code, round(time.monotonic() - t0, 2)))
        if status == "starting":
            assert r.status_code == 503 and body["message"]
        elif status == "importing":
            assert r.status_code == 200
            job = body["import"]
            seen["progress"].add(job["processed"])
            seen["embedding"] += bool(job["embedding"])
            look = httpx.post(
                f"{base}/api/knowledge/lookup", json={"query": "Redis 内存满"}, timeout=60
            )
            assert look.status_code == 200, look.text
            if "firstImport" in look.json()["scores"]:
                assert look.json()["result"]["message"].startswith(NOTE)
                seen["noted_lookups"] += 1
        elif status == "ok":
            return seen
        time.sleep(0.2)
    raise AssertionError(f"the first import never ended: {seen}")


def test_fresh_clone_answers_at_once_and_imports_in_the_background(tmp_path: Path) -> None:
    # The shipped runbooks carry their vectors, so their import ends within seconds; a few of the
    # operator's own (embedded at the start) make it last long enough to watch it run.
    work = fresh_clone(tmp_path, own_runbooks=6)
    runbooks = shipped_runbooks(work)
    port, log = free_port(), tmp_path / "server.log"
    base = f"http://127.0.0.1:{port}"
    t0 = time.monotonic()
    proc = serve(work, port, log)
    try:
        page_s = wait_for_page(base, proc, t0, log)
        seen = follow_first_import(base, t0)
        done_s = time.monotonic() - t0
        timeline = {"console_answers_s": round(page_s, 2), "first_import_done_s": round(done_s, 2)}
        timeline["healthz"] = seen["statuses"]
        print("first-start timeline:", json.dumps(timeline))
        assert page_s < ANSWERS_WITHIN_S, timeline
        assert "importing" in [s for s, _, _ in seen["statuses"]], timeline
        assert seen["noted_lookups"] >= 1, seen  # a lookup during the import said so
        assert len(seen["progress"]) > 1, seen  # progress moved file by file
        stats = httpx.get(f"{base}/api/knowledge/stats").json()
        assert stats["byStatus"]["INDEXED"] == len(runbooks), stats
        data = work / "data"
        assert {p.name for p in data.iterdir()} >= {"superbiz.db", "milvus.db", "knowledge_base"}
        assert any(data.glob("*checkpoints*")), sorted(p.name for p in data.iterdir())
        # The CLI cannot open the Milvus Lite file the server holds: the server counts for it.
        cli = subprocess.run(
            [python_bin(), "-m", "retrieval", "stats"],
            cwd=work,
            env=default_env(work, port),
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert cli.returncode == 0, cli.stderr[-2000:]
        assert json.loads(cli.stdout)["vectors"] == stats["vectors"] > 0, cli.stdout
        assert "Traceback" not in cli.stderr, cli.stderr[-2000:]

        up = httpx.post(
            f"{base}/api/documents/upload",
            files={"file": ("disk-full.md", RUNBOOK.encode(), "text/markdown")},
            data={"category": "newcat"},
        )
        assert up.status_code == 201, up.text
        assert (data / "knowledge_base" / "newcat" / "disk-full.md").is_file()
        assert git(work, "status", "--porcelain") == ""  # nothing written into the checkout
        gone = httpx.delete(f"{base}/api/documents/{up.json()['document']['docId']}")
        assert gone.status_code == 200, gone.text
        assert not (data / "knowledge_base" / "newcat").exists()  # no empty category left
    finally:
        stop_process(proc)
    assert git(work, "status", "--porcelain") == ""
