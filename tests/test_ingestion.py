"""Ingestion lifecycle on a private copy of the sample runbooks (real Milvus Lite + SQLite)."""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from persistence.models import ApiDocument
from retrieval.writing.errors import (
    DocumentExists,
    FileTooLarge,
    InvalidUpload,
    UnsupportedFileType,
)
from tests.support.kb import started_kb


@pytest.fixture(scope="module")
async def kb(tmp_path_factory: pytest.TempPathFactory, embeddings):
    events: list[dict] = []
    async with started_kb(
        tmp_path_factory.mktemp("kb-life"), embeddings, progress=events.append, max_upload_mb=1
    ) as (knowledge, report):
        assert report.count("INDEXED") == 6
        assert events[0]["event"] == "start" and events[-1]["event"] == "done"
        assert [e["file"] for e in events if e.get("status") == "INDEXED"] == [
            r.file_path for r in report.results
        ]
        yield knowledge


async def _rows(kb) -> list[ApiDocument]:
    async with kb.db.session() as s:
        return list(
            (await s.execute(sa.select(ApiDocument).order_by(ApiDocument.file_path))).scalars()
        )


async def test_rerun_is_a_noop_and_force_keeps_counts(kb) -> None:
    before_rows = {r.file_path: (r.doc_id, r.chunk_count) for r in await _rows(kb)}
    vectors = kb.store.count()
    again = await kb.ingestion.init()
    assert again.count("SKIPPED") == 6 and again.count("INDEXED") == 0
    forced = await kb.ingestion.init(force=True)
    assert forced.count("INDEXED") == 6
    after_rows = {r.file_path: (r.doc_id, r.chunk_count) for r in await _rows(kb)}
    assert after_rows == before_rows  # same ids, no duplicate rows
    assert kb.store.count() == vectors  # vectors replaced, not added


async def test_edited_file_is_reindexed(kb) -> None:
    path = kb.settings.knowledge_base_dir / "infrastructure" / "redis-config.md"
    path.write_text(
        path.read_text(encoding="utf-8").replace(
            "  - Lettuce", "  - Lettuce\n  - KEYSPACE_NOTIFY_XYZ"
        ),
        encoding="utf-8",
    )
    assert kb.lookup("KEYSPACE_NOTIFY_XYZ").payload["found"] is False
    report = await kb.ingestion.init()
    assert [r.file_path for r in report.results if r.status == "INDEXED"] == [
        "infrastructure/redis-config.md"
    ]
    out = kb.lookup("KEYSPACE_NOTIFY_XYZ")
    assert out.payload["relevanceLevel"] == "PRECISE"
    assert out.payload["primary"]["source"] == "infrastructure/redis-config.md"


async def test_bad_file_fails_alone_with_a_reason(kb) -> None:
    kb_dir = kb.settings.knowledge_base_dir
    (kb_dir / "ops").mkdir(exist_ok=True)
    (kb_dir / "ops" / "broken.md").write_text("---\ntitle: [oops\n---\nbody\n", encoding="utf-8")
    (kb_dir / "ops" / "latin1.md").write_bytes("# Café\nrésumé".encode("latin-1"))
    (kb_dir / "ops" / "empty.md").write_bytes(b"")
    (kb_dir / "ops" / "plain.md").write_text(
        "# 磁盘告警处理\n\n先清理 /var/log，再扩容磁盘 DISK_FULL_ABC。\n", encoding="utf-8"
    )
    report = await kb.ingestion.init()
    by_file = {r.file_path: r for r in report.results}
    assert (
        by_file["ops/broken.md"].status == "FAILED"
        and "not valid YAML" in by_file["ops/broken.md"].error
    )
    assert by_file["ops/latin1.md"].status == "FAILED" and "UTF-8" in by_file["ops/latin1.md"].error
    assert by_file["ops/empty.md"].status == "FAILED" and "empty" in by_file["ops/empty.md"].error
    plain = by_file["ops/plain.md"]
    assert plain.status == "INDEXED" and "title" in plain.derived and plain.warnings
    assert by_file["api/payment-errors.md"].status == "SKIPPED"
    rows = {r.file_path: r for r in await _rows(kb)}
    assert rows["ops/broken.md"].status == "FAILED" and rows["ops/broken.md"].error_message
    assert rows["ops/plain.md"].title == "磁盘告警处理"
    assert kb.store.count(rows["ops/broken.md"].doc_id) == 0
    stats = await kb.stats()
    assert stats["by_status"]["FAILED"] == 3


async def test_delete_leaves_no_vector_or_l0_trace(kb) -> None:
    rows = {r.file_path: r for r in await _rows(kb)}
    row = rows["ops/plain.md"]
    assert kb.store.count(row.doc_id) > 0 and kb.catalog.l0.search("磁盘告警处理")
    await kb.ingestion.delete(row.doc_id)
    assert kb.store.count(row.doc_id) == 0
    assert kb.catalog.l0.search("磁盘告警处理") == [] and kb.catalog.get(row.doc_id) is None
    assert "ops/plain.md" not in {r.file_path for r in await _rows(kb)}
    assert not (kb.settings.knowledge_base_dir / "ops" / "plain.md").exists()
    assert all(
        h.fields["doc_id"] != row.doc_id for h in kb.store.search_bm25("DISK_FULL_ABC 磁盘", 20)
    )


async def test_upload_validates_and_indexes(kb) -> None:
    ing = kb.ingestion
    with pytest.raises(UnsupportedFileType):
        await ing.upload("run.exe", b"x", "ops")
    with pytest.raises(InvalidUpload, match="category"):
        await ing.upload("a.md", b"# a", "../etc")
    with pytest.raises(FileTooLarge):
        await ing.upload("big.md", b"x" * (1024 * 1024 + 1), "ops")
    result = await ing.upload(
        "../../evil/../k8s-排障.md", "# K8s 排障\n\nCrashLoopBackOff_QQ 处理。\n".encode(), "ops"
    )
    assert result.status == "INDEXED" and result.file_path == "ops/k8s-排障.md"
    assert (kb.settings.knowledge_base_dir / "ops" / "k8s-排障.md").is_file()
    found = kb.lookup("K8s 排障 CrashLoopBackOff").payload
    assert found["relevanceLevel"] == "PRECISE" and found["primary"]["source"] == "ops/k8s-排障.md"
    with pytest.raises(DocumentExists):
        await ing.upload("k8s-排障.md", b"# again", "ops")
    replaced = await ing.upload("k8s-排障.md", b"# K8s v2\n\nnew body", "ops", replace=True)
    assert replaced.doc_id == result.doc_id and replaced.status == "INDEXED"


async def test_removed_file_is_forgotten_on_init(kb) -> None:
    target = kb.settings.knowledge_base_dir / "troubleshooting" / "fault-diagnosis-process.md"
    doc = kb.catalog.by_path("troubleshooting/fault-diagnosis-process.md")
    assert doc is not None
    target.unlink()
    report = await kb.ingestion.init()
    assert [r.file_path for r in report.results if r.status == "REMOVED"] == [
        "troubleshooting/fault-diagnosis-process.md"
    ]
    assert kb.store.count(doc.doc_id) == 0 and kb.catalog.by_path(doc.file_path) is None


async def test_catalog_reloads_from_the_database(kb, embeddings) -> None:
    from retrieval.knowledge import KnowledgeBase

    other = KnowledgeBase.build(kb.settings, kb.db, embeddings=embeddings)
    other.store = kb.store  # one Milvus Lite folder can be opened once per process
    await other.loader.load()
    assert {d.file_path for d in other.catalog.all()} == {d.file_path for d in kb.catalog.all()}
    assert other.catalog.version == kb.catalog.version


async def test_a_document_imported_before_its_identifiers_were_recorded_is_imported_again(
    kb,
) -> None:
    """An older version stored no ``codes``: while one document lacks them every identifier
    counts as held (today's judge on yesterday's rows); the next init imports it again."""
    path = "infrastructure/mysql-connection-pool.md"
    assert kb.catalog.holds_code("errtimeout") and not kb.catalog.holds_code("splunkprod")
    async with kb.db.session() as s:
        row = (
            await s.execute(sa.select(ApiDocument).where(ApiDocument.file_path == path))
        ).scalar_one()
        row.doc_metadata = {k: v for k, v in row.doc_metadata.items() if k != "codes"}
        await s.commit()
    await kb.loader.load()
    assert kb.catalog.by_path(path).codes is None
    assert kb.catalog.holds_code("splunkprod")  # unknown while one document's are unrecorded
    report = await kb.ingestion.init()
    assert [r.file_path for r in report.results if r.status == "INDEXED"] == [path]
    assert kb.catalog.by_path(path).codes and not kb.catalog.holds_code("splunkprod")


async def test_an_upload_leaves_no_word_cache_or_model_pages_behind(kb) -> None:
    """Issue 20: a large upload of varied text filled the tokenizer's word cache (~12 MB) and left
    the model file's pages resident; both are handed back when the write ends."""
    from tests.test_e5_pages import resident_mb, varied_text

    model = kb.store.embeddings
    body = "# Varied words\n\n" + "\n\n".join(varied_text(seed=7))
    result = await kb.ingestion.upload("varied-words.md", body.encode(), "ops")
    assert result.status == "INDEXED" and result.chunks > 1
    assert model.tokenizer.cached_words == 0
    assert resident_mb(model.file.path) < 2.0
    model.count_tokens("the cache fills again when used")
    assert model.tokenizer.cached_words > 0
    await kb.ingestion.delete(result.doc_id)
