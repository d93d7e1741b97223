"""Re-imports reuse stored vectors (issue 14): real model, real Milvus Lite + SQLite.

The model is wrapped only to count the texts the store hands it; the vectors are the model's own.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from langchain_core.embeddings import Embeddings

from retrieval.l1.collection_model import EmbeddingMismatch
from tests.support.kb import build_kb, kb_settings
from tests.support.paths import fixture_docs

QUERIES = [
    "Redis OOM command not allowed",
    "数据库连接池超时怎么排查？",
    "支付网关 ERR_TIMEOUT",
    "Flyway migration checksum mismatch",
    "maxmemory-policy allkeys-lru",
]


class CountingEmbeddings(Embeddings):
    """The session's real model, recording every text it is asked to embed for a document."""

    def __init__(self, inner: Any, model_id: str | None = None) -> None:
        self.inner = inner
        self.model_id = model_id or inner.model_id
        self.embedded: list[str] = []

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        self.embedded += texts
        return self.inner.embed_documents(texts)

    def embed_query(self, text: str) -> list[float]:
        return self.inner.embed_query(text)

    def __getattr__(self, name: str) -> Any:  # dimension, max_tokens, count_tokens, tokenizer …
        return getattr(self.inner, name)


@pytest.fixture(autouse=True)
def _no_shipped_vectors(monkeypatch: pytest.MonkeyPatch) -> None:
    # The fixture runbooks are copies of shipped ones, whose vectors ship with the code
    # (retrieval/l1/sample_vectors.py) and would serve every chunk first. This file is about the
    # vectors the collection itself holds, so the shipped ones are left out.
    from retrieval.l1 import sample_vectors

    monkeypatch.setattr(sample_vectors, "load", lambda *a, **k: {})


def _rows(kb) -> dict[str, tuple[str, tuple[float, ...]]]:  # noqa: ANN001
    """pk → (text, vector) of every stored chunk."""
    paths = fixture_docs()
    return {r.pk: (r.text, r.vector) for r in kb.store.stored_chunks(file_paths=paths)}


def _answers(kb) -> list[tuple]:  # noqa: ANN001
    out = []
    for q in QUERIES:
        p = kb.lookup(q).payload
        primary = p.get("primary") or {}
        sup = tuple(s["source"] for s in p.get("supplement") or [])
        out.append((q, p["found"], p.get("relevanceLevel"), primary.get("source"), sup))
    return out


async def _kb(base: Path, emb: Embeddings):  # noqa: ANN202
    return await build_kb(kb_settings(base), emb)


@pytest.fixture
async def cold(tmp_path: Path, embeddings):
    emb = CountingEmbeddings(embeddings)
    kb = await _kb(tmp_path / "cold", emb)
    report = await kb.start()
    assert report is not None and report.count("INDEXED") == len(fixture_docs())
    try:
        yield kb, emb
    finally:
        await kb.close()
        await kb.db.dispose()


async def test_forced_reimport_of_an_unchanged_base_embeds_nothing(cold) -> None:
    kb, emb = cold
    chunks = kb.store.count()
    assert len(emb.embedded) == chunks  # the cold import embedded every chunk once
    rows, answers = _rows(kb), _answers(kb)
    emb.embedded.clear()

    forced = await kb.ingestion.init(force=True)

    assert forced.count("INDEXED") == len(fixture_docs())
    assert emb.embedded == []
    assert kb.store.vector_cache.hits >= chunks
    assert kb.store.count() == chunks and _rows(kb) == rows
    assert _answers(kb) == answers


async def test_editing_one_section_reembeds_only_its_chunk(cold, tmp_path: Path) -> None:
    kb, emb = cold
    before = _rows(kb)
    rel = "infrastructure/redis-config.md"
    path = kb.settings.knowledge_base_dir / rel
    text = path.read_text(encoding="utf-8")
    edited = text.replace(
        "调到 10 可以让 LRU/LFU 更精确", "调到 10 可以让 LRU/LFU 更精确 QZREIMPORT"
    )
    assert edited != text
    path.write_text(edited, encoding="utf-8")
    emb.embedded.clear()

    report = await kb.ingestion.init()

    assert [r.file_path for r in report.results if r.status == "INDEXED"] == [rel]
    after = _rows(kb)
    new_texts = {t for t, _ in after.values()} - {t for t, _ in before.values()}
    assert emb.embedded and sorted(emb.embedded) == sorted(new_texts)
    assert all("QZREIMPORT" in t for t in emb.embedded)
    doc_id = next(r.doc_id for r in report.results if r.status == "INDEXED")
    doc_chunks = sum(1 for pk in after if pk.startswith(f"{doc_id}:"))
    assert len(emb.embedded) < doc_chunks  # the other chunks of the document kept their vectors
    assert kb.lookup("QZREIMPORT").payload["primary"]["source"] == rel

    # The same edited base imported cold holds the same vectors and answers alike.
    fresh_emb = CountingEmbeddings(emb.inner)
    fresh = await _kb(tmp_path / "fresh", fresh_emb)
    (fresh.settings.knowledge_base_dir / rel).write_text(edited, encoding="utf-8")
    try:
        await fresh.start()
        assert len(fresh_emb.embedded) == fresh.store.count()
        cold_rows = {pk.split(":")[1] + t: v for pk, (t, v) in _rows(fresh).items()}
        warm_rows = {pk.split(":")[1] + t: v for pk, (t, v) in after.items()}
        assert warm_rows.keys() == cold_rows.keys()
        assert all(
            max(abs(a - b) for a, b in zip(warm_rows[k], cold_rows[k], strict=True)) < 1e-6
            for k in warm_rows
        )
        assert _answers(fresh) == _answers(kb)
    finally:
        await fresh.close()
        await fresh.db.dispose()


async def test_another_model_id_reuses_no_vector(cold) -> None:
    kb, emb = cold
    await kb.close()
    other = CountingEmbeddings(emb.inner, model_id="local:another-model")
    again = await _kb(kb.settings.data_dir, other)
    try:
        # The collection refuses the other model; re-indexing (as `python -m retrieval reindex`
        # does) drops it, and every chunk is embedded by the new model.
        with pytest.raises(EmbeddingMismatch):
            again.store.check_model()
        await again.loader.load()
        again.store.drop()
        report = await again.ingestion.init(force=True)
        assert report.count("INDEXED") == len(fixture_docs())
        assert len(other.embedded) == again.store.count() > 0
        assert again.store.vector_cache.hits == 0
    finally:
        await again.close()
        await again.db.dispose()


@pytest.mark.slow  # a Milvus Lite server process
async def test_against_a_milvus_server_a_forced_reimport_embeds_nothing(
    tmp_path: Path, embeddings
) -> None:
    from tests.support.processes import MilvusLiteServer, free_port

    milvus = MilvusLiteServer(tmp_path / "milvus-data", free_port()).start()
    emb = CountingEmbeddings(embeddings)
    kb = await build_kb(kb_settings(tmp_path, milvus_uri=milvus.uri), emb)
    try:
        await kb.start()
        chunks = kb.store.count()
        rows, answers = _rows(kb), _answers(kb)
        emb.embedded.clear()

        forced = await kb.ingestion.init(force=True)

        assert forced.count("INDEXED") == len(fixture_docs())
        assert emb.embedded == []
        # Rows are rewritten against a server (docs/deploy.md: BM25 statistics), each vector
        # reused: the same rows and vectors, the same answers.
        assert kb.store.count() == chunks and _rows(kb) == rows
        assert _answers(kb) == answers
    finally:
        await kb.close()
        await kb.db.dispose()
        milvus.stop()
