"""A damaged Milvus Lite store is set aside and rebuilt from the documents (issue 20).

Seen before: a ``data_*.parquet`` truncated while the server was stopped left it degraded for good
("unreachable"), every upload stored FAILED, until someone deleted the file by hand; a truncation
while it ran went unnoticed (the next start failed). Now the damaged files are moved aside (never
deleted), the store is rebuilt from the documents table and the Markdown files while the API
serves, ``/healthz`` and lookups say so meanwhile, and the store's files are whole afterwards: a
later start opens them as they are.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import httpx
import pytest

from retrieval.l1.embeddings import cpu_has_native_bf16
from retrieval.l1.lite_files import release
from tests.support.kb import kb_settings
from tests.support.paths import fixture_docs
from tests.support.processes import start_server
from tests.support.recovery import all_documents, runbook
from tests.support.serving import HeldEmbeddings, health_until, serving

MARK = "REPAIR_MARK_K9"
MARK_RUNBOOK = f"""---
title: Repair mark runbook
keywords: [{MARK}]
category: ops
---
# Repair mark runbook

When the billing worker reports {MARK}, drain its queue, restart it and watch the backlog shrink.
"""


def segments(work: Path) -> list[Path]:
    return sorted((work / "milvus.db").rglob("data_*.parquet"))


def truncate(path: Path) -> int:
    """Cut the file in half (what a full disk or a crash mid-copy leaves); its new size."""
    size = path.stat().st_size // 2
    with path.open("r+b") as f:
        f.truncate(size)
    return size


def _set_aside(work: Path) -> list[Path]:
    return sorted(work.glob("milvus.db.damaged-*"))


def _kept(work: Path, aside: Path, segment: Path, size: int) -> bool:
    """The damaged file was moved into the set-aside folder as it was, not deleted (the rebuilt
    collection may have written a new file of the same name where it was)."""
    moved = aside / segment.relative_to(work / "milvus.db")
    return moved.is_file() and moved.stat().st_size == size


async def _lookup(client: httpx.AsyncClient, query: str) -> dict:
    r = await client.post("/api/knowledge/lookup", json={"query": query})
    assert r.status_code == 200, r.text
    return r.json()


async def test_a_store_damaged_while_stopped_is_rebuilt_while_the_api_serves(
    tmp_path: Path, embeddings
) -> None:  # noqa: ANN001
    from server import create_app
    from services import Services

    settings = kb_settings(tmp_path)
    (Path(settings.knowledge_base_dir) / "ops").mkdir()
    (Path(settings.knowledge_base_dir) / "ops" / "repair-mark.md").write_text(MARK_RUNBOOK)
    svc = await Services.start(settings, embeddings=embeddings)
    before = (await svc.kb.stats())["vectors"]
    await svc.close()
    release(settings.milvus_uri)  # the server is stopped: the next one reads the files from disk
    segment = segments(tmp_path)[0]
    size = truncate(segment)

    held = HeldEmbeddings(embeddings)  # the runbook above has no shipped vectors: it is embedded
    app = create_app(settings, embeddings=held)
    async with serving(app) as client:
        try:
            body = await health_until(client, {"importing", "degraded", "ok"})
            assert body["status"] == "importing", body
            assert body["message"].startswith("repairing the vector store"), body
            aside = Path(body["repair"]["setAsideIn"])
            assert _set_aside(tmp_path) == [aside] and _kept(tmp_path, aside, segment, size)
            assert any(segment.name in d and "truncated" in d for d in body["repair"]["damaged"])
            # It serves meanwhile, and a lookup says what it cannot see yet.
            found = await _lookup(client, "ERR_TIMEOUT")
            assert found["result"]["relevanceLevel"] == "PRECISE", found  # L0 has every document
            assert "向量库的文件已损坏，正在修复" in found["result"]["message"]
            assert held.waiting.is_set() or not held.release.is_set()
        finally:
            held.release.set()
        done = await health_until(client, {"ok"}, timeout=180)
        assert done["problems"] == [] and "repair" not in done
        docs = (await client.get("/api/documents", params={"pageSize": 100})).json()["items"]
        assert {d["status"] for d in docs} == {"INDEXED"}
        stats = (await client.get("/api/knowledge/stats")).json()
        assert stats["vectors"] == sum(d["chunkCount"] for d in docs) == before
        found = await _lookup(client, MARK)
        assert found["result"]["primary"]["source"] == "ops/repair-mark.md"
        assert "正在修复" not in (found["result"].get("message") or "")


async def test_a_store_damaged_under_a_running_server_is_rebuilt_without_embedding(
    tmp_path: Path, embeddings
) -> None:  # noqa: ANN001
    from server import create_app
    from services import Services

    settings = kb_settings(tmp_path, knowledge_check_seconds=1)
    svc = await Services.start(settings, embeddings=embeddings)
    app = create_app(services=svc)
    try:
        async with serving(app) as client:
            before = (await client.get("/api/knowledge/stats")).json()["vectors"]
            embedded = svc.kb.store.vector_cache.misses
            segment = segments(tmp_path)[0]
            size = truncate(segment)

            deadline = time.monotonic() + 60  # the periodic check runs every second here
            while not _set_aside(tmp_path) or svc.kb.recovery.rebuild.active:
                assert time.monotonic() < deadline, "the damaged store was never set aside"
                await asyncio.sleep(0.2)
            [aside] = _set_aside(tmp_path)
            assert _kept(tmp_path, aside, segment, size)
            health = await health_until(client, {"ok"}, timeout=30)
            assert health["problems"] == [], health
            assert svc.kb.store.vector_cache.misses == embedded  # the vectors came from memory
            assert (await client.get("/api/knowledge/stats")).json()["vectors"] == before
            up = await client.post(
                "/api/documents/upload",
                files={"file": ("after-repair.md", runbook(41), "text/markdown")},
                data={"category": "ops"},
            )
            assert up.status_code == 201 and up.json()["document"]["status"] == "INDEXED", up.text
            after = (await client.get("/api/knowledge/stats")).json()["vectors"]
    finally:
        await svc.close()
    release(settings.milvus_uri)

    # What the next start reads from disk is whole: it opens as it is, nothing set aside again.
    svc = await Services.start(settings, embeddings=embeddings)
    try:
        assert await svc.kb.recovery.health() == (True, [])
        assert await asyncio.to_thread(svc.kb.store.count) == after > before
        assert _set_aside(tmp_path) == [aside]
    finally:
        await svc.close()
        release(settings.milvus_uri)


@pytest.mark.slow  # real server processes
def test_a_truncated_segment_found_at_start_by_the_real_server(tmp_path: Path) -> None:
    srv = start_server(tmp_path, name="first")
    try:
        before = httpx.get(f"{srv.base_url}/api/knowledge/stats", timeout=30).json()["vectors"]
    finally:
        srv.stop()
    segment = segments(tmp_path)[0]
    size = truncate(segment)

    srv = start_server(tmp_path, name="restarted", healthy=False)
    try:
        deadline, health = time.monotonic() + 180, {}
        while health.get("status") != "ok":
            assert time.monotonic() < deadline, f"never repaired: {health}\n{srv.log_tail()}"
            time.sleep(0.5)
            health = httpx.get(f"{srv.base_url}/healthz", timeout=30).json()
        assert health["problems"] == []
        [aside] = _set_aside(tmp_path)
        assert _kept(tmp_path, aside, segment, size)
        log = srv.log_path.read_text(errors="replace")
        assert "are damaged" in log and str(aside) in log and "nothing is deleted" in log
        docs = all_documents(srv.base_url)
        assert {d["status"] for d in docs} == {"INDEXED"} and len(docs) == len(fixture_docs())
        stats = httpx.get(f"{srv.base_url}/api/knowledge/stats", timeout=30).json()
        assert stats["vectors"] == sum(d["chunkCount"] for d in docs) == before
        up = httpx.post(
            f"{srv.base_url}/api/documents/upload",
            files={"file": ("after-repair.md", runbook(42), "text/markdown")},
            data={"category": "ops"},
            timeout=120,
        )
        assert up.status_code == 201 and up.json()["document"]["status"] == "INDEXED", up.text
    finally:
        srv.stop()

    srv = start_server(tmp_path, name="third")  # healthy at once: the files on disk are whole
    try:
        assert _set_aside(tmp_path) == [aside]
        if cpu_has_native_bf16():  # precision auto probes bf16 only there
            # A restart skips the bf16 probe: its verdict is remembered (the run's cache folder).
            log = srv.log_path.read_text(errors="replace")
            assert "remembered from an earlier probe" in log, srv.log_tail()
    finally:
        srv.stop()
