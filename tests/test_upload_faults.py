"""Uploads and imports under real faults: a full disk, a database refusing writes, a vector store
that is down. Nothing half-written is left behind, and every message is a sentence."""

from __future__ import annotations

import asyncio
import contextlib
import os
import resource
import sqlite3
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from retrieval.writing.uploads import RESERVE_BYTES
from tests.support.hostile import CLASS_NAME, assert_error, document_rows, isolated_client, kb_files
from tests.support.processes import free_port, start_server

# Free space left for an upload, in KB: a little (it used to fail at the row: 503, or 503 with the
# file and a PROCESSING row left behind), then just past the 1 MB an upload sets aside to undo
# itself (now the row, then the vectors fail).
FREE = [k * 1024 for k in (16, 64, 128)] + [RESERVE_BYTES + k * 1024 for k in (0, 32, 48, 64)]
SMALL = b"# Disk check\n\nRun df -h first. DISK_CHECK_QZ\n"


def _upload(base_url: str, name: str, data: bytes, *, replace: bool = False) -> httpx.Response:
    return httpx.post(
        f"{base_url}/api/documents/upload",
        files={"file": (name, data, "text/markdown")},
        data={"category": "ops", "replace": str(replace).lower()},
        timeout=120,
    )


@pytest.mark.slow
def test_full_disk_leaves_no_partial_file(tmp_path: Path) -> None:
    """RLIMIT_FSIZE on the running server: writing past 512 KB fails as a full disk would."""
    srv = start_server(tmp_path, LOG_LEVEL="WARNING")
    try:
        kb_dir = tmp_path / "knowledge_base"
        before = kb_files(kb_dir)
        soft, hard = resource.prlimit(srv.proc.pid, resource.RLIMIT_FSIZE)
        resource.prlimit(srv.proc.pid, resource.RLIMIT_FSIZE, (512 * 1024, hard))
        try:
            # 800 KB: under the 1 MB the multipart parser keeps in memory, over the 512 KB limit.
            big = b"# Big runbook\n\n" + b"grow the volume " * 50_000
            r = _upload(srv.base_url, "big.md", big)
        finally:
            resource.prlimit(srv.proc.pid, resource.RLIMIT_FSIZE, (soft, hard))
        message = assert_error(r, 507, "storage_full")
        assert "disk holding the knowledge base is full" in message
        assert kb_files(kb_dir) == before  # no partial .tmp file, no big.md
        docs = httpx.get(f"{srv.base_url}/api/documents", params={"q": "big"}).json()
        assert docs["total"] == 0  # no row
        ok = _upload(srv.base_url, "disk-check.md", SMALL)  # the server carries on
        assert ok.status_code == 201 and ok.json()["result"]["status"] == "INDEXED", ok.text
    finally:
        srv.stop()


async def _job(client: httpx.AsyncClient, force: bool) -> dict:
    job = (await client.post("/api/knowledge/init", params={"force": force})).json()
    while job["status"] == "running":
        await asyncio.sleep(0.2)
        job = (await client.get(f"/api/knowledge/jobs/{job['jobId']}")).json()
    return job


@pytest.mark.slow
async def test_database_refusing_writes_leaves_no_stray_file(
    tmp_path: Path,
    embeddings,  # noqa: ANN001
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Another process holds SQLite's write lock: reads work, every write times out."""
    # The lock outlasts any wait; a write gives up after 10 s here, not the product's 30 s (two
    # waits were a minute of the run spent sleeping).
    monkeypatch.setattr("persistence.db.SQLITE_BUSY_MS", 10_000)
    async with isolated_client(tmp_path, embeddings) as client:
        files, rows = kb_files(client.kb_dir), await document_rows(client.services)
        holder = sqlite3.connect(tmp_path / "kb.db", isolation_level=None)
        holder.execute("BEGIN IMMEDIATE")
        try:
            started = (await client.post("/api/knowledge/init", params={"force": True})).json()
            while not (await client.get("/api/knowledge/stats")).json()["importing"]:
                await asyncio.sleep(0.05)
            # Waits for the import (which fails after the lock's wait), then fails the same way.
            upload = await client.post(
                "/api/documents/upload",
                files={"file": ("stray.md", SMALL, "text/markdown")},
                data={"category": "ops"},
            )
        finally:
            holder.rollback()
            holder.close()
        job = (await client.get(f"/api/knowledge/jobs/{started['jobId']}")).json()
        assert job["status"] == "failed"
        assert job["error"].startswith("the database is unreachable or refused the write")
        assert_error(upload, 503, "database_unavailable")
        assert kb_files(client.kb_dir) == files  # no stray.md, no temporary file
        after = await _job(client, force=False)  # a later import finds nothing to bring in
        assert after["status"] == "done" and "ops/stray.md" not in str(after)
        assert set(await document_rows(client.services)) == set(rows)


async def test_vector_store_down_is_reported_in_words(tmp_path: Path, embeddings) -> None:  # noqa: ANN001
    dead = f"http://127.0.0.1:{free_port()}"
    async with isolated_client(tmp_path, embeddings, milvus_uri=dead) as client:
        expected = (
            f"the vector store at {dead} is unreachable; re-index the document when it is back"
        )
        up = await client.post(
            "/api/documents/upload",
            files={"file": ("disk-check.md", SMALL, "text/markdown")},
            data={"category": "ops"},
        )
        assert up.status_code == 201 and up.json()["result"]["status"] == "FAILED"
        assert up.json()["result"]["error"] == expected
        docs = (await client.get("/api/documents", params={"pageSize": 50})).json()["items"]
        assert docs and all(d["errorMessage"] == expected for d in docs), docs
        detail = (await client.get(f"/api/documents/{docs[0]['docId']}")).json()
        assert detail["chunksUnavailable"].startswith("chunks are unavailable: the vector store")
        job = await _job(client, force=False)
        assert job["files"] and all(f["error"] == expected for f in job["files"]), job
        for text in [detail["chunksUnavailable"], *(f["error"] for f in job["files"])]:
            assert not CLASS_NAME.search(text), text


@contextmanager
def _small_disk(folder: Path, size_mb: int = 300) -> Iterator[Path]:
    """A real file system that can fill up (tmpfs): RLIMIT_FSIZE makes SQLite say "disk I/O
    error" (EFBIG, not ENOSPC), so a nearly full disk needs a real one. Needs root."""
    folder.mkdir()
    mount = ["mount", "-t", "tmpfs", "-o", f"size={size_mb}m", "tmpfs", str(folder)]
    if os.geteuid() != 0 or subprocess.run(mount, capture_output=True).returncode != 0:
        pytest.skip("mounting a small tmpfs needs root")
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=False)


@contextmanager
def _leaving(disk: Path, free: int) -> Iterator[None]:
    """Fill ``disk`` until ``free`` bytes are left; the space comes back afterwards."""
    filler = disk / "filler"
    with filler.open("wb", buffering=0) as f, contextlib.suppress(OSError):
        while True:
            f.write(b"\0" * 65536)
    os.truncate(filler, max(0, filler.stat().st_size - free))
    try:
        yield
    finally:
        filler.unlink()


def _documents(base_url: str) -> dict[str, tuple]:
    items = httpx.get(f"{base_url}/api/documents", params={"pageSize": 100}).json()["items"]
    return {d["filePath"]: (d["status"], d["chunkCount"], d["errorMessage"]) for d in items}


@pytest.mark.slow
@pytest.mark.parametrize("replace", [False, True], ids=["new", "replace"])
def test_nearly_full_disk_undoes_the_whole_upload(tmp_path: Path, replace: bool) -> None:
    """Room for the file but not for its row or its vectors (it used to be 201 FAILED or 503,
    with the file left behind): 507, and files, rows and lookups stay as they were; a replaced
    runbook keeps its old version."""
    with _small_disk(tmp_path / "disk") as disk:
        srv = start_server(disk / "work", LOG_LEVEL="WARNING")
        try:
            kb_dir = disk / "work" / "knowledge_base"
            old = b"# Disk check\n\nRun df -h first. OLD_VERSION_QZ\n"
            assert _upload(srv.base_url, "disk-check.md", old).status_code == 201
            files, rows = kb_files(kb_dir), _documents(srv.base_url)
            body = b"# Grow the volume\n\nExtend the LV, then resize. NEW_VERSION_QZ\n" * 20
            name = "disk-check.md" if replace else "grow.md"
            for free in FREE:
                with _leaving(disk, free):
                    r = _upload(srv.base_url, name, body, replace=replace)
                assert r.status_code == 507, (free, r.status_code)
                message = assert_error(r, 507, "storage_full")
                assert "disk holding the knowledge base is full" in message, (free, message)
                assert kb_files(kb_dir) == files, free  # no new file, no .tmp, old one kept
                assert _documents(srv.base_url) == rows, free
            lookup = f"{srv.base_url}/api/knowledge/lookup"
            found = httpx.post(lookup, json={"query": "OLD_VERSION_QZ"}).json()["result"]
            assert found["primary"]["source"] == "ops/disk-check.md", found
            assert "Extend the LV" not in httpx.post(lookup, json={"query": "NEW_VERSION_QZ"}).text
            ok = _upload(srv.base_url, name, body, replace=replace)  # with room, it goes in
            assert ok.status_code == 201 and ok.json()["result"]["status"] == "INDEXED", ok.text
        finally:
            srv.stop()
