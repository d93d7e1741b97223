"""What the vector store really holds, for reconciling it with the documents table: vectors per
document, whether Milvus Lite's files are still on disk, every row (for a rebuild). Blocking."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Sequence
from typing import Any

from retrieval.l1.collection_schema import DENSE, META_FIELDS, PK, TEXT
from retrieval.l1.embedding_cache import StoredChunk
from retrieval.l1.milvus_lite import collection_on_disk
from retrieval.l1.store import ChunkStore

QUERY_LIMIT = 16384  # Milvus caps a query's offset + limit here


def _pages(store: ChunkStore, fields: Sequence[str], batch: int) -> Iterator[list[dict[str, Any]]]:
    """Every row's ``fields``: one query while they fit in one, else an iterator's pages."""
    if not store.exists():
        return
    if store.count() < QUERY_LIMIT:
        yield store.client.query(
            store.collection, filter="", output_fields=list(fields), limit=QUERY_LIMIT
        )
        return
    pages = store.client.query_iterator(
        store.collection, batch_size=batch, filter="", output_fields=list(fields)
    )
    try:
        while page := pages.next():
            yield page
    finally:
        pages.close()


def vectors_per_document(store: ChunkStore) -> dict[str, int]:
    """doc_id → vectors, read in one pass (Milvus has no grouped count)."""
    counts: Counter[str] = Counter()
    for page in _pages(store, ["doc_id"], 4096):
        counts.update(r["doc_id"] for r in page)
    return dict(counts)


def stored_chunk_pages(store: ChunkStore) -> Iterator[list[StoredChunk]]:
    """Every row, vectors included, page by page (their vectors kept for a rebuild)."""
    for page in _pages(store, [PK, TEXT, DENSE, *META_FIELDS], 1024):
        yield [StoredChunk.from_row(r) for r in page]


def files_removed(store: ChunkStore) -> bool:
    """Milvus Lite: the collection's files were removed while this process had it open. It still
    answers searches from memory, but every write fails and a restart finds it empty."""
    return store.local and store.exists() and not collection_on_disk(store.uri, store.collection)
