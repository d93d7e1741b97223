"""Chunks fit the embedding model's window in its own tokens: nothing is cut off when embedded."""

import pytest

from retrieval.chunking import chunk_document, with_card
from retrieval.documents import parse_document
from tests.support.paths import ROOT

pytestmark = pytest.mark.slow  # chunks and embeds the whole shipped knowledge base


def _sample_docs():
    for path in sorted((ROOT / "knowledge_base").rglob("*.md")):
        rel = path.relative_to(ROOT / "knowledge_base").as_posix()
        yield parse_document(path.read_bytes(), rel)


def test_every_indexed_chunk_fits_the_window(embeddings) -> None:
    window = embeddings.max_tokens
    assert window == 254  # MiniLM reads 256 tokens, two of them [CLS] and [SEP]
    count = embeddings.count_tokens
    seen = 0
    for doc in _sample_docs():
        body = chunk_document(doc.title, doc.body, size=500, overlap=50, count=count, window=window)
        chunks = with_card(body, doc.title, "card " * 400, window, count)
        for chunk in chunks:
            assert count(chunk.indexed_text) <= window, (doc.file_path, chunk.breadcrumb)
            seen += 1
    assert seen > 20


def test_no_truncation_warning_when_the_sample_kb_is_chunked_and_embedded(caplog) -> None:
    from retrieval.embeddings import SentenceTransformerEmbeddings

    fresh = SentenceTransformerEmbeddings()  # transformers warns once per tokenizer: a new one
    texts = []
    for doc in _sample_docs():
        body = chunk_document(
            doc.title,
            doc.body,
            size=500,
            overlap=50,
            count=fresh.count_tokens,
            window=fresh.max_tokens,
        )
        texts += [c.indexed_text for c in body]
    fresh.embed_documents(texts)
    warned = [r for r in caplog.records if "longer than the specified maximum" in r.getMessage()]
    assert warned == []
    # ...whereas tokenizing an over-long text without care does warn (the check can fail)
    fresh.model.tokenizer("word " * 400)
    assert any("longer than the specified maximum" in r.getMessage() for r in caplog.records)
