"""Re-imports reuse work: a chunk whose text is unchanged keeps the vector it already has.

A vector is looked up by the SHA-256 of the embedding model's id and the chunk's indexed text
(breadcrumb + section text, so chunk size, overlap and headings are all part of it). The vectors
come from the Milvus collection itself, read back with their text before a document is rewritten:
the collection is already persistent, already records which model made its vectors
(``collection_model.py``) and holds exactly what a lookup searches, so this cache can neither go
stale nor need a second store, migration or clean-up. Why this rather than a cache table:
``docs/retrieval.md`` ("Re-imports").

A document whose stored rows already equal what would be written (same ids, texts and metadata)
is not rewritten at all, so a forced re-import of an unchanged knowledge base embeds nothing and
writes nothing to Milvus.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from retrieval.parsing.chunking import Chunk


def content_key(model_id: str, text: str) -> str:
    """What a vector is cached under: the model that made it and the exact text it embeds."""
    return hashlib.sha256(f"{model_id}\0{text}".encode()).hexdigest()


@dataclass(frozen=True)
class StoredChunk:
    """One row of the collection as written by ``ChunkStore.add_chunks``."""

    pk: str
    doc_id: str
    file_path: str
    category: str
    chunk_index: int
    breadcrumb: str
    text: str
    vector: tuple[float, ...]

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> StoredChunk:
        return cls(
            pk=str(row["pk"]),
            doc_id=str(row["doc_id"]),
            file_path=str(row["file_path"]),
            category=str(row["category"]),
            chunk_index=int(row["chunk_index"]),
            breadcrumb=str(row["breadcrumb"]),
            text=str(row["text"]),
            vector=tuple(float(x) for x in row["dense"]),
        )


def planned_rows(
    doc_id: str, file_path: str, category: str, chunks: Sequence[Chunk]
) -> list[tuple[str, str, str, str, int, str, str]]:
    """The rows ``add_chunks`` would write for a document, vectors aside, in a comparable form."""
    return sorted(
        (
            f"{doc_id}:{c.index}",
            doc_id,
            file_path,
            category,
            c.index,
            c.breadcrumb[:1024],
            c.indexed_text,
        )
        for c in chunks
    )


def unchanged(
    stored: Sequence[StoredChunk],
    doc_id: str,
    file_path: str,
    category: str,
    chunks: Sequence[Chunk],
) -> bool:
    """The collection already holds exactly these chunks of this document: nothing to write."""
    if not chunks or len(stored) != len(chunks):
        return False
    have = sorted(
        (s.pk, s.doc_id, s.file_path, s.category, s.chunk_index, s.breadcrumb, s.text)
        for s in stored
    )
    return have == planned_rows(doc_id, file_path, category, chunks)


class EmbeddingCache:
    """Vectors of one model by content key, filled from stored rows, emptied after each batch
    (the collection is the persistent copy; this only holds what the running batch may reuse).

    ``shipped`` (read on first use, never emptied) adds the vectors computed ahead for the shipped
    sample runbooks (``sample_vectors.py``), so a first start embeds nothing. ``keep`` holds rows
    across batches until ``forget_kept``: a store rebuilt while running re-embeds nothing."""

    def __init__(
        self, model_id: str, shipped: Callable[[], Mapping[str, list[float]]] | None = None
    ) -> None:
        self.model_id = model_id
        self._vectors: dict[str, list[float]] = {}
        self._kept: dict[str, np.ndarray] = {}  # float32: a whole store's vectors may be kept
        self._lock = threading.Lock()
        self._shipped_source = shipped
        self._shipped: Mapping[str, list[float]] | None = None if shipped else {}
        self.hits = 0  # texts served from stored vectors since start (for logs and benchmarks)
        self.misses = 0  # texts the model had to embed

    def remember(self, rows: Iterable[StoredChunk]) -> None:
        with self._lock:
            for row in rows:
                self._vectors[content_key(self.model_id, row.text)] = list(row.vector)

    def keep(self, rows: Iterable[StoredChunk]) -> None:
        with self._lock:
            for row in rows:
                self._kept[content_key(self.model_id, row.text)] = np.asarray(
                    row.vector, np.float32
                )

    def forget_kept(self) -> None:
        with self._lock:
            self._kept.clear()

    def _lookup(self, key: str) -> list[float] | None:
        """Under the lock: the vector of ``key``, stored ones first."""
        if self._shipped is None:
            self._shipped = self._shipped_source() if self._shipped_source else {}
        if (found := self._vectors.get(key)) is not None:
            return found
        if (kept := self._kept.get(key)) is not None:
            return kept.tolist()
        return self._shipped.get(key)

    def get(self, text: str) -> list[float] | None:
        with self._lock:
            vector = self._lookup(content_key(self.model_id, text))
        return list(vector) if vector is not None else None

    def missing(self, texts: Iterable[str]) -> list[str]:
        """The distinct texts no stored (or shipped) vector covers, in first-seen order."""
        with self._lock:
            return [
                t
                for t in dict.fromkeys(texts)
                if self._lookup(content_key(self.model_id, t)) is None
            ]

    def count(self, *, hits: int = 0, misses: int = 0) -> None:
        with self._lock:
            self.hits += hits
            self.misses += misses

    def clear(self) -> None:
        with self._lock:
            self._vectors.clear()
