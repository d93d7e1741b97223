"""Recovery and reconciliation in process (real Milvus Lite, SQLite and MariaDB): interrupted imports
are finished or failed with a reason, stores that disagree are repaired, an unusable vector store is
reported without anything being changed. The crash itself is in ``test_recovery.py``."""

from __future__ import annotations

import asyncio
from pathlib import Path

from persistence import document_repository as docs_repo
from persistence.models import ApiDocument, DocumentStatus
from retrieval.parsing.chunking import Chunk
from retrieval.repair.consistency import audit
from retrieval.repair.recovery import INTERRUPTED
from tests.support.kb import build_kb, kb_settings, started_kb
from tests.support.processes import free_port

PAYMENT, REDIS = "api/payment-errors.md", "infrastructure/redis-config.md"


def _row(doc_id: str, status: str, chunks: int) -> ApiDocument:
    path = f"x/{doc_id}.md"
    return ApiDocument(
        doc_id=doc_id, file_name=path, file_path=path, status=status, chunk_count=chunks
    )


async def _row_of(kb, path: str) -> ApiDocument:
    async with kb.db.session() as s:
        row = await docs_repo.get_document_by_path(s, path)
    assert row is not None
    return row


async def _set_status(kb, path: str, status: DocumentStatus) -> ApiDocument:
    row = await _row_of(kb, path)
    async with kb.db.session() as s:
        return await docs_repo.update_document(s, row.doc_id, status=status)


def test_audit_names_each_kind_of_disagreement() -> None:
    rows = [
        _row("ok", DocumentStatus.INDEXED, 3),
        _row("short", DocumentStatus.INDEXED, 4),  # lost vectors
        _row("doubled", DocumentStatus.INDEXED, 2),  # imported twice at once
        _row("failed", DocumentStatus.FAILED, 0),  # its vectors should have gone
        _row("busy", DocumentStatus.PROCESSING, 5),  # another import owns it: not judged
    ]
    vectors = {"ok": 3, "short": 1, "doubled": 4, "failed": 2, "busy": 1, "deleted": 6}
    found = audit(rows, vectors, catalog_ids={"ok", "short", "doubled"})
    assert [r.doc_id for r in found.reimport] == ["short", "doubled"]
    assert sorted(found.orphans) == ["deleted", "failed"]
    assert (found.missing, found.extra, found.catalog_stale) == (3, 2 + 2 + 6, False)
    assert audit(rows, vectors, {"ok"}).catalog_stale  # L0 lacks indexed documents
    agreeing = audit(rows[:1], {"ok": 3}, {"ok"})
    assert agreeing.clean and agreeing.summary() == "nothing"


async def test_interrupted_imports_are_finished_or_failed_with_a_reason(
    tmp_path: Path, embeddings, db_url: str
) -> None:
    async with started_kb(tmp_path, embeddings, database_url=db_url) as (kb, _):
        pending = await _set_status(kb, PAYMENT, DocumentStatus.PENDING)
        processing = await _set_status(kb, REDIS, DocumentStatus.PROCESSING)
        kb.store.delete_doc(pending.doc_id)  # a forced import had dropped its old vectors
        (kb.settings.knowledge_base_dir / REDIS).unlink()  # and this file went meanwhile

        assert await kb.recovery.run(thorough=True) == []

        again = await _row_of(kb, PAYMENT)
        assert again.status == DocumentStatus.INDEXED and again.doc_id == pending.doc_id
        assert kb.store.count(again.doc_id) == again.chunk_count > 0
        assert kb.lookup("ERR_TIMEOUT").payload["primary"]["source"] == PAYMENT  # in L0 again
        gone = await _row_of(kb, REDIS)
        assert (gone.status, gone.error_message) == (DocumentStatus.FAILED, INTERRUPTED)
        assert kb.store.count(processing.doc_id) == 0 and kb.catalog.by_path(REDIS) is None
        assert await kb.recovery.health() == (True, [])


async def test_periodic_check_repairs_lost_and_stray_vectors(
    tmp_path: Path, embeddings, db_url: str
) -> None:
    async with started_kb(tmp_path, embeddings, database_url=db_url) as (kb, _):
        row = await _row_of(kb, PAYMENT)
        total = kb.store.count()
        kb.store.delete_doc(row.doc_id)  # vectors lost
        stray = [Chunk(index=0, breadcrumb="Gone", text="stray", token_count=1)]
        kb.store.add_chunks(doc_id="deleted-doc", file_path="x/gone.md", category="x", chunks=stray)
        kb.catalog.remove(row.doc_id)  # and L0 lost it too

        assert await kb.recovery.run(thorough=False) == []

        assert kb.store.count(row.doc_id) == row.chunk_count and kb.store.count() == total
        assert kb.store.count("deleted-doc") == 0
        assert kb.catalog.by_path(PAYMENT) is not None


async def test_the_check_repeats_by_itself(tmp_path: Path, embeddings) -> None:
    async with started_kb(tmp_path, embeddings) as (kb, _):
        row = await _row_of(kb, REDIS)
        checks = kb.recovery.start(interval_s=0.2)
        try:
            kb.store.delete_doc(row.doc_id)
            for _ in range(100):
                await asyncio.sleep(0.2)
                if kb.store.count(row.doc_id) == row.chunk_count:
                    break
            assert kb.store.count(row.doc_id) == row.chunk_count, "not repaired within 20 s"
        finally:
            await checks.stop()


async def test_an_unreachable_store_is_reported_and_nothing_is_changed(
    tmp_path: Path, embeddings
) -> None:
    async with started_kb(tmp_path, embeddings) as (kb, _):
        await _set_status(kb, PAYMENT, DocumentStatus.PENDING)
    dead = kb_settings(tmp_path, milvus_uri=f"http://127.0.0.1:{free_port()}")
    kb = await build_kb(dead, embeddings)
    try:
        await kb.start()
        assert (await _row_of(kb, PAYMENT)).status == DocumentStatus.PENDING  # waits, not FAILED
        ok, problems = await kb.recovery.health()
        assert not ok and len(problems) == 1
        assert "unreachable" in problems[0] and "keywords (L0)" in problems[0]
        assert kb.catalog.by_path(REDIS) is not None  # L0 still holds the indexed documents
    finally:
        await kb.close()
        await kb.db.dispose()
