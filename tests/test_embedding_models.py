"""Embedding models: a hosted OpenAI-compatible endpoint (over the real wire protocol), the model
recorded in the collection, and re-indexing when it changes."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from retrieval.l1.collection_model import EmbeddingMismatch
from retrieval.l1.embeddings import OpenAICompatibleEmbeddings
from tests.support.embeddings_stub import StubEmbeddings
from tests.support.kb import build_kb, kb_settings

pytestmark = pytest.mark.slow  # imports the fixture runbooks three times, one of them over HTTP


@pytest.fixture(scope="module")
def endpoint(embeddings):
    stub = StubEmbeddings(embeddings).start()
    yield stub
    stub.stop()


def openai_settings(base: Path, endpoint: StubEmbeddings, **embedding: object):
    values = {"provider": "openai", "base_url": endpoint.base_url, "model": endpoint.name}
    return kb_settings(base, retrieval={"embedding": values | embedding})


async def test_a_hosted_endpoint_embeds_imports_and_lookups(tmp_path: Path, endpoint) -> None:
    before = len(endpoint.requests)
    kb = await build_kb(openai_settings(tmp_path, endpoint, dimension=384), None)
    try:
        assert isinstance(kb.embeddings, OpenAICompatibleEmbeddings)
        report = await kb.start()
        assert report is not None and report.count("INDEXED") == 6
        out = kb.lookup("database connection pool timeout")
        assert out.payload["primary"]["source"] == "infrastructure/mysql-connection-pool.md"
        # a multilingual endpoint reads Chinese: the dense route keeps its vote
        assert kb.lookup_service.route_weights("连接池超时怎么排查")["dense"] == 1.0
    finally:
        await kb.close()
        await kb.db.dispose()
    sent = endpoint.requests[before:]
    assert sent and all(r["model"] == endpoint.name for r in sent)
    assert any("连接池" in str(r["input"]) for r in sent)  # the runbooks went over the wire


async def test_a_wrong_dimension_is_named(tmp_path: Path, endpoint) -> None:
    emb = OpenAICompatibleEmbeddings(
        model=endpoint.name, base_url=endpoint.base_url, dimension=1024
    )
    with pytest.raises(ValueError, match="384-d vectors.*dimension says 1024"):
        emb.embed_documents(["x"])


async def test_another_model_stops_start_up_and_reindex_switches(
    tmp_path: Path, endpoint, embeddings, monkeypatch: pytest.MonkeyPatch
) -> None:
    kb = await build_kb(openai_settings(tmp_path, endpoint), None)
    await kb.start()
    await kb.close()
    await kb.db.dispose()

    local = await build_kb(kb_settings(tmp_path), embeddings)  # same stores, the packaged MiniLM
    with pytest.raises(EmbeddingMismatch) as err:
        await local.start()
    text = str(err.value)
    assert (
        "openai:bge-m3-stub" in text and "local:" in text and "python -m retrieval reindex" in text
    )
    await local.close()
    await local.db.dispose()

    from retrieval.__main__ import main

    s = kb_settings(tmp_path)
    for name, value in {
        "DATABASE_URL": s.database_url,
        "MILVUS_URI": s.milvus_uri,
        "KNOWLEDGE_BASE_DIR": str(s.knowledge_base_dir),
        "DATA_DIR": str(s.data_dir),
    }.items():
        monkeypatch.setenv(name, value)
    assert await asyncio.to_thread(main, ["reindex"]) == 0
    again = await build_kb(kb_settings(tmp_path), embeddings)
    try:
        await again.start()  # no mismatch any more
        out = again.lookup("ERR_TIMEOUT")
        assert out.payload["relevanceLevel"] == "PRECISE"
        assert again.store.count() > 6
    finally:
        await again.close()
        await again.db.dispose()


def test_settings_choose_the_local_model_by_name() -> None:
    from retrieval.l1.e5_local import E5Embeddings
    from retrieval.l1.embeddings import SentenceTransformerEmbeddings, make_embeddings
    from settings import EmbeddingSettings

    default = make_embeddings(EmbeddingSettings())
    assert isinstance(default, E5Embeddings)
    assert default.model_id == "local:multilingual-e5-small-q4"
    minilm = make_embeddings(EmbeddingSettings(model="all-MiniLM-L6-v2", precision="fp32"))
    assert isinstance(minilm, SentenceTransformerEmbeddings) and minilm.packaged
    assert minilm.model_id == "local:all-MiniLM-L6-v2"
    assert minilm.requested_precision == "fp32"


async def test_minilm_still_serves_and_its_collection_is_refused_by_the_default(
    tmp_path: Path, embeddings, minilm
) -> None:
    from retrieval.l1 import collection_model

    english = await build_kb(kb_settings(tmp_path), minilm)
    try:
        await english.start()
        out = english.lookup("database connection pool timeout")
        assert out.payload["primary"]["source"] == "infrastructure/mysql-connection-pool.md"
        # What releases before multilingual-e5 recorded for MiniLM is still MiniLM's collection.
        store = english.store
        collection_model.record(store.client, store.collection, "local:model", 384)
    finally:
        await english.close()
        await english.db.dispose()

    again = await build_kb(kb_settings(tmp_path), minilm)
    try:
        await again.start()  # the old id is accepted: no re-index for MiniLM users
        assert again.lookup("ERR_TIMEOUT").payload["relevanceLevel"] == "PRECISE"
    finally:
        await again.close()
        await again.db.dispose()

    default = await build_kb(kb_settings(tmp_path), embeddings)
    with pytest.raises(EmbeddingMismatch) as err:
        await default.start()
    text = str(err.value)
    assert "local:model" in text and "local:multilingual-e5-small-q4" in text
    assert "python -m retrieval reindex" in text
    await default.close()
    await default.db.dispose()
