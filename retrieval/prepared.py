"""Vectors computed ahead of an insert, handed to langchain-milvus when it embeds.

The importer embeds several small documents' chunks in one length-sorted batch (~1.25× faster on
CPU than one call per document); ``ChunkStore.add_chunks`` then inserts each document, and
langchain-milvus asks this wrapper for the vectors, which it hands out (once each) by text. Any other
text goes to the real model.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

from langchain_core.embeddings import Embeddings


class PreparedEmbeddings(Embeddings):
    def __init__(self, inner: Embeddings) -> None:
        self.inner = inner
        self.ready: dict[str, list[float]] = {}
        self.lock = threading.Lock()

    def prepare(self, texts: Sequence[str]) -> None:
        texts = list(dict.fromkeys(texts))
        if not texts:
            return
        vectors = self.inner.embed_documents(texts)
        with self.lock:
            self.ready.update(zip(texts, vectors, strict=True))

    def discard(self) -> None:
        with self.lock:
            self.ready.clear()

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        with self.lock:
            found = [self.ready.pop(t, None) for t in texts]
        missing = [t for t, v in zip(texts, found, strict=True) if v is None]
        computed = iter(self.inner.embed_documents(missing) if missing else [])
        return [v if v is not None else next(computed) for v in found]

    def embed_query(self, text: str) -> list[float]:
        return self.inner.embed_query(text)
