"""Crash recovery with real server processes: kill -9 by PID during an import and during an upload,
and Milvus Lite's files removed under a running server. After a restart nothing is left half-done
and ``/healthz`` tells the truth at every step."""

from __future__ import annotations

import shutil
import threading
from pathlib import Path

import httpx
import pytest

from tests.support.kb import copy_fixture_kb
from tests.support.paths import fixture_docs
from tests.support.processes import start_server
from tests.support.recovery import (
    add_runbooks,
    all_documents,
    chunks_disagreeing,
    kill_9,
    runbook,
    statuses,
    wait_for,
)

pytestmark = pytest.mark.slow  # real server processes

UNFINISHED = {"PENDING", "PROCESSING"}
RAW = ("MilvusException", "Errno", "Traceback", "FileNotFoundError")


def _health(base: str) -> dict:
    r = httpx.get(f"{base}/healthz", timeout=30)
    assert r.status_code == 200, r.text
    return r.json()


def _assert_consistent(base: str, expected_files: int) -> list[dict]:
    """Every document INDEXED, in L0, with its chunks in the vector store; health says ok."""
    docs = all_documents(base)
    by_status = {d["filePath"]: d["status"] for d in docs}
    assert not {p for p, s in by_status.items() if s in UNFINISHED}, by_status
    assert sum(s == "INDEXED" for s in by_status.values()) == expected_files, by_status
    health = _health(base)
    assert health["documents"] == expected_files  # L0 holds every INDEXED document
    assert health["status"] == "ok" and health["problems"] == [], health
    assert chunks_disagreeing(base, docs) == []
    stats = httpx.get(f"{base}/api/knowledge/stats", timeout=30).json()
    assert stats["vectors"] == sum(d["chunkCount"] for d in docs) > 0
    return docs


def _lookup(base: str, query: str) -> dict:
    r = httpx.post(f"{base}/api/knowledge/lookup", json={"query": query}, timeout=60)
    assert r.status_code == 200, r.text
    return r.json()["result"]


def test_kill_during_forced_import_is_recovered_at_restart(tmp_path: Path) -> None:
    extra = add_runbooks(copy_fixture_kb(tmp_path / "knowledge_base"), 36)
    files = len(fixture_docs()) + len(extra)
    srv = start_server(tmp_path, name="first")
    try:
        # Every chunk of the extra runbooks changes: unchanged ones would reuse their stored
        # vectors, and the forced import would be over before it could be interrupted.
        for rel in extra:
            path = tmp_path / "knowledge_base" / rel
            path.write_bytes(path.read_bytes().replace(b"svc-", b"service-"))
        job = httpx.post(f"{srv.base_url}/api/knowledge/init", params={"force": "true"}).json()

        def halfway() -> bool:
            got = httpx.get(f"{srv.base_url}/api/knowledge/jobs/{job['jobId']}").json()
            return 0 < got["processed"] < got["total"] - 8

        wait_for(halfway, timeout=240, what="the forced import to be half done")
        kill_9(srv)
    finally:
        srv.stop()
    left = statuses(tmp_path / "kb.db")
    assert {s for s in left.values()} & UNFINISHED, "the kill came too late to test anything"
    interrupted = sorted(p for p, s in left.items() if s in UNFINISHED)

    srv = start_server(tmp_path, name="restarted")
    try:
        _assert_consistent(srv.base_url, files)
        # A document the crash had left PENDING is found by its own keyword again.
        victim = next(p for p in interrupted if p.startswith("synthetic/"))
        code = f"SYNTH_ERR_{victim[-6:-3]}"
        found = _lookup(srv.base_url, code)
        assert found["relevanceLevel"] == "PRECISE" and found["primary"]["source"] == victim
        assert _lookup(srv.base_url, "restart the queue worker then watch the error rate")["found"]
    finally:
        srv.stop()


def test_kill_during_an_upload_does_not_leave_it_processing(tmp_path: Path) -> None:
    srv = start_server(tmp_path, name="first")
    # Long enough that embedding it keeps the row PROCESSING for a while.
    big = runbook(900, sections=600)
    outcome: dict[str, object] = {}

    def upload() -> None:
        try:
            outcome["response"] = httpx.post(
                f"{srv.base_url}/api/documents/upload",
                files={"file": ("big-runbook.md", big, "text/markdown")},
                data={"category": "ops"},
                timeout=300,
            )
        except httpx.HTTPError as exc:  # the server dies under it
            outcome["error"] = exc

    sender = threading.Thread(target=upload)
    try:
        sender.start()
        wait_for(
            lambda: statuses(tmp_path / "kb.db").get("ops/big-runbook.md") == "PROCESSING",
            timeout=120,
            what="the upload to be PROCESSING",
        )
        kill_9(srv)
        sender.join(timeout=60)
        assert "error" in outcome, "the upload finished before the kill"
    finally:
        srv.stop()
    assert statuses(tmp_path / "kb.db")["ops/big-runbook.md"] == "PROCESSING"

    srv = start_server(tmp_path, name="restarted")
    try:
        docs = _assert_consistent(srv.base_url, len(fixture_docs()) + 1)
        big_doc = next(d for d in docs if d["filePath"] == "ops/big-runbook.md")
        assert big_doc["chunkCount"] > 10
        assert _lookup(srv.base_url, "SYNTH_ERR_900")["relevanceLevel"] == "PRECISE"
    finally:
        srv.stop()


def test_milvus_files_removed_under_a_running_server(tmp_path: Path) -> None:
    srv = start_server(tmp_path, name="first")
    try:
        before = httpx.get(f"{srv.base_url}/api/knowledge/stats").json()
        assert before["vectors"] > 0
        shutil.rmtree(tmp_path / "milvus.db")

        health = _health(srv.base_url)
        assert health["status"] == "degraded" and health["vectorStore"]["ok"] is False
        said = " ".join(health["problems"])
        assert "removed" in said and "restart" in said, health
        assert str(before["vectors"]) in said  # how much is gone

        up = httpx.post(
            f"{srv.base_url}/api/documents/upload",
            files={"file": ("disk.md", runbook(7), "text/markdown")},
            data={"category": "ops"},
        )
        assert up.status_code == 503, up.text
        message = up.json()["message"]
        assert "restart" in message and not any(raw in message for raw in RAW), message
        assert not (tmp_path / "knowledge_base" / "ops" / "disk.md").exists()  # nothing stored
        listed = httpx.get(f"{srv.base_url}/api/documents").json()
        assert listed["total"] == len(fixture_docs())  # nothing already stored was lost
        # Refused, not half-done: a forced re-import would mark every document FAILED.
        init = httpx.post(f"{srv.base_url}/api/knowledge/init", params={"force": "true"})
        assert init.status_code == 503 and "restart" in init.json()["message"], init.text
        assert _lookup(srv.base_url, "ERR_TIMEOUT")["relevanceLevel"] == "PRECISE"  # L0 answers
    finally:
        srv.stop()

    srv = start_server(tmp_path, name="restarted")
    try:
        docs = _assert_consistent(srv.base_url, len(fixture_docs()))
        assert sum(d["chunkCount"] for d in docs) == before["vectors"]  # all of them re-indexed
    finally:
        srv.stop()
