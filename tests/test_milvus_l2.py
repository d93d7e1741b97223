"""Against the real Milvus Lite: which L2 convention it reports, and what FS-1 then computes."""

import math
from pathlib import Path

import pytest
from langchain_core.embeddings import Embeddings

from retrieval.judging.relevance import similarity
from retrieval.l1.store import ChunkStore
from retrieval.parsing.chunking import Chunk

A = [1.0, 0.0, 0.0, 0.0]
B = [0.6, 0.8, 0.0, 0.0]  # unit vector, cos(A, B) = 0.6, |A-B| = sqrt(0.8)


class FixedEmbeddings(Embeddings):
    """Maps known texts to known unit vectors."""

    table = {"alpha": A, "beta": B}

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self.table[t.split("\n\n")[-1]] for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return self.table[text]


def test_milvus_reports_squared_l2_and_fs1_equals_cosine(tmp_path: Path) -> None:
    store = ChunkStore(str(tmp_path / "l2.db"), FixedEmbeddings(), collection="l2_probe")
    try:
        store.add_chunks(
            doc_id="a", file_path="x/a.md", category="x", chunks=[Chunk(0, "A", "alpha", 1)]
        )
        store.add_chunks(
            doc_id="b", file_path="x/b.md", category="x", chunks=[Chunk(0, "B", "beta", 1)]
        )
        hits = store.search_dense(A, limit=2)
    finally:
        store.close()
    by_doc = {h.fields["doc_id"]: h.score for h in hits}
    assert by_doc["a"] == pytest.approx(0.0, abs=1e-6)
    squared, plain = 0.8, math.sqrt(0.8)
    assert by_doc["b"] == pytest.approx(squared, abs=1e-5)  # squared L2 ...
    assert abs(by_doc["b"] - plain) > 0.05  # ... not the plain Euclidean distance
    # With max_l2 = 2, FS-1 turns the squared distance of unit vectors into their cosine.
    assert similarity(by_doc["b"], 2.0) == pytest.approx(0.6, abs=1e-5)
    assert similarity(by_doc["a"], 2.0) == pytest.approx(1.0, abs=1e-6)
