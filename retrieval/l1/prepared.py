"""Vectors computed ahead of an insert, handed to langchain-milvus when it embeds.

The importer embeds several small documents' chunks in one length-sorted batch (~1.25× faster on
CPU than one call per document); ``ChunkStore.add_chunks`` then inserts each document, and
langchain-milvus asks this wrapper for the vectors, which it hands out (once each) by text. A text
whose stored vector was read back into the ``EmbeddingCache`` is served from there and never
embedded again (``embedding_cache.py``). Any other text goes to the real model.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

from langchain_core.embeddings import Embeddings

from retrieval.l1.embedding_cache import EmbeddingCache


class PreparedEmbeddings(Embeddings):
    def __init__(self, inner: Embeddings, cache: EmbeddingCache | None = None) -> None:
        self.inner = inner
        self.cache = cache
        self.ready: dict[str, list[float]] = {}
        self.lock = threading.Lock()

    def prepare(self, texts: Sequence[str]) -> None:
        with self.lock:
            texts = [t for t in dict.fromkeys(texts) if t not in self.ready]
        if self.cache is not None:
            texts = self.cache.missing(texts)
        if not texts:
            return
        vectors = self.inner.embed_documents(texts)
        if self.cache is not None:
            self.cache.count(misses=len(texts))
        with self.lock:
            self.ready.update(zip(texts, vectors, strict=True))

    def discard(self) -> None:
        with self.lock:
            self.ready.clear()
        if self.cache is not None:
            self.cache.clear()

    def _cached(self, text: str) -> list[float] | None:
        return self.cache.get(text) if self.cache is not None else None

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        with self.lock:
            found = [self.ready.pop(t, None) for t in texts]
        hits = 0
        for i, t in enumerate(texts):
            if found[i] is None and (vector := self._cached(t)) is not None:
                found[i], hits = vector, hits + 1
        missing = list(dict.fromkeys(t for t, v in zip(texts, found, strict=True) if v is None))
        vectors = self.inner.embed_documents(missing) if missing else []
        computed = dict(zip(missing, vectors, strict=True))
        if self.cache is not None:
            self.cache.count(hits=hits, misses=len(missing))
        return [v if v is not None else computed[t] for t, v in zip(texts, found, strict=True)]

    def embed_query(self, text: str) -> list[float]:
        return self.inner.embed_query(text)
