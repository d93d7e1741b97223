"""The first import runs in the background of a serving server: /healthz goes starting (503) →
importing (200, with the job's progress per file and per chunk batch) → ok; a lookup meanwhile
answers from what is indexed and says so; the seeded knowledge folder and empty category folders."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import httpx
import pytest

from retrieval.writing.seed import seed_knowledge
from retrieval.writing.uploads import remove_file
from tests.support.kb import build_kb, kb_settings
from tests.support.threaded_server import ThreadedServer

NOTE = "知识库首次导入进行中"


def big_runbook(sections: int) -> str:
    """A runbook long enough to be embedded in several slices (one chunk per section)."""
    body = "\n\n".join(
        f"## 步骤 {i}: check shard {i}\n\n"
        + f"Inspect shard {i} replication lag, the write queue and the disk of node {i}. " * 6
        for i in range(sections)
    )
    return f"---\ntitle: Shard runbook\nkeywords: [SHARD_LAG_BG]\n---\n# Shard runbook\n\n{body}\n"


@pytest.mark.slow  # embeds ~150 chunks
async def test_a_big_file_reports_its_chunk_batches(tmp_path: Path, embeddings) -> None:  # noqa: ANN001
    settings = kb_settings(tmp_path)
    (Path(settings.knowledge_base_dir) / "ops").mkdir()
    (Path(settings.knowledge_base_dir) / "ops" / "shards.md").write_text(big_runbook(150))
    kb = await build_kb(settings, embeddings)
    events: list[dict] = []
    try:
        await kb.start(ingest_if_empty=False)
        await kb.ingestion.init(progress=events.append)
        await asyncio.sleep(0.1)  # the last thread-side reports land on the loop
    finally:
        await kb.close()
        await kb.db.dispose()
    chunks = [e for e in events if e["event"] == "chunks"]
    first_file = next(i for i, e in enumerate(events) if e["event"] == "file")
    assert len(chunks) >= 3, chunks  # progress moved before any file was written
    assert all(events.index(c) < first_file for c in chunks[:-1])
    dones = [c["done"] for c in chunks]
    assert dones == sorted(dones) and dones[-1] == chunks[-1]["total"] > 140
    assert chunks[0]["first"] == 1 and chunks[0]["last"] == chunks[0]["of"] == 7


class _App(ThreadedServer):
    def __init__(self, settings, embeddings) -> None:  # noqa: ANN001
        self.settings, self.embeddings = settings, embeddings

    def app(self):  # noqa: ANN201
        from server import create_app

        return create_app(self.settings, embeddings=self.embeddings)


@pytest.mark.slow  # a server starting and importing in a thread
def test_serving_starts_before_the_first_import_ends(tmp_path: Path, embeddings) -> None:  # noqa: ANN001
    settings = kb_settings(tmp_path, knowledge_check_seconds=3600)
    (Path(settings.knowledge_base_dir) / "ops").mkdir()
    (Path(settings.knowledge_base_dir) / "ops" / "shards.md").write_text(big_runbook(150))
    server = _App(settings, embeddings).start()
    base = f"http://127.0.0.1:{server.port}"
    statuses: list[tuple[str, int]] = []
    noted = embedding_seen = 0
    try:
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            r = httpx.get(f"{base}/healthz", timeout=10)
            body = r.json()
            if not statuses or statuses[-1][0] != body["status"]:
                statuses.append((body["status"], r.status_code))
            if body["status"] == "ok":
                break
            if body["status"] == "importing":
                embedding_seen += bool(body["import"]["embedding"])
                look = httpx.post(f"{base}/api/knowledge/lookup", json={"query": "ERR_TIMEOUT"})
                if "firstImport" in look.json()["scores"]:
                    assert look.json()["result"]["message"].startswith(NOTE), look.json()
                    noted += 1
            time.sleep(0.1)
        assert statuses[-1] == ("ok", 200), statuses
        assert ("importing", 200) in statuses, statuses
        assert all(code == 503 for s, code in statuses if s == "starting"), statuses
        assert noted >= 1 and embedding_seen >= 1, (noted, embedding_seen)
        after = httpx.post(f"{base}/api/knowledge/lookup", json={"query": "ERR_TIMEOUT"}).json()
        assert "firstImport" not in after["scores"]
        assert NOTE not in (after["result"]["message"] or "")
        assert after["result"]["relevanceLevel"] == "PRECISE"
    finally:
        server.stop()


def test_only_data_dirs_own_missing_folder_is_seeded(tmp_path: Path) -> None:
    samples = tmp_path / "samples"
    (samples / "cache").mkdir(parents=True)
    (samples / "cache" / "redis.md").write_text("# Redis\n")
    (samples / ".hidden").write_text("x")
    target = tmp_path / "data" / "knowledge_base"
    assert not seed_knowledge(target, samples, owned_by_data_dir=False)
    assert not target.exists()  # a folder the operator chose is never filled
    assert seed_knowledge(target, samples, owned_by_data_dir=True)
    assert sorted(p.relative_to(target).as_posix() for p in target.rglob("*")) == [
        "cache",
        "cache/redis.md",
    ]
    (target / "cache" / "redis.md").unlink()
    assert not seed_knowledge(target, samples, owned_by_data_dir=True)  # exists: left alone
    assert not (target / "cache" / "redis.md").exists()
    assert [p.name for p in target.parent.iterdir()] == ["knowledge_base"]  # no staging left


def test_deleting_the_last_file_of_a_category_removes_its_folder(tmp_path: Path) -> None:
    root = tmp_path / "kb"
    (root / "ops" / "deep").mkdir(parents=True)
    (root / "ops" / "a.md").write_text("a")
    (root / "ops" / "deep" / "b.md").write_text("b")
    remove_file(root / "ops" / "deep" / "b.md", root)
    assert (root / "ops").is_dir() and not (root / "ops" / "deep").exists()
    remove_file(root / "ops" / "a.md", root)
    assert root.is_dir() and not (root / "ops").exists()
