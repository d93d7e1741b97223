"""What the vector store really holds, for reconciling it with the documents table: vectors per
document, whether Milvus Lite's files are still on disk, every row (for a rebuild). Blocking."""

from __future__ import annotations

from collections import Counter

from retrieval.l1.collection_schema import DENSE, META_FIELDS, PK, TEXT
from retrieval.l1.embedding_cache import StoredChunk
from retrieval.l1.milvus_lite import collection_on_disk
from retrieval.l1.store import ChunkStore

QUERY_LIMIT = 16384  # Milvus caps a query's offset + limit here


def vectors_per_document(store: ChunkStore) -> dict[str, int]:
    """doc_id → vectors, read in one pass (Milvus has no grouped count)."""
    if not store.exists():
        return {}
    if store.count() < QUERY_LIMIT:
        rows = store.client.query(
            store.collection, filter="", output_fields=["doc_id"], limit=QUERY_LIMIT
        )
        return dict(Counter(r["doc_id"] for r in rows))
    counts: Counter[str] = Counter()
    pages = store.client.query_iterator(
        store.collection, batch_size=4096, filter="", output_fields=["doc_id"]
    )
    try:
        while batch := pages.next():
            counts.update(r["doc_id"] for r in batch)
    finally:
        pages.close()
    return dict(counts)


def files_removed(store: ChunkStore) -> bool:
    """Milvus Lite: the collection's files were removed while this process had it open. It still
    answers searches from memory, but every write fails and a restart finds it empty."""
    return store.local and store.exists() and not collection_on_disk(store.uri, store.collection)


def all_stored_chunks(store: ChunkStore) -> list[StoredChunk]:
    """Every row, vectors included, read in pages (to keep their vectors for a rebuild)."""
    if not store.exists():
        return []
    rows: list[StoredChunk] = []
    pages = store.client.query_iterator(
        store.collection, batch_size=1024, filter="", output_fields=[PK, TEXT, DENSE, *META_FIELDS]
    )
    try:
        while batch := pages.next():
            rows += [StoredChunk.from_row(r) for r in batch]
    finally:
        pages.close()
    return rows
