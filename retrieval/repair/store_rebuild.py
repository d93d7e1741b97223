"""A Milvus Lite store whose files are damaged is set aside and rebuilt from the documents.

Found at start-up (before Milvus Lite opens the folder, which would fail on every call, for good)
or by the periodic check while the server runs (Milvus Lite then still serves what it loaded, but
the next start would fail): the collection's folder is moved aside, never deleted
(``lite_files.set_aside``), and the recovery round re-imports every document from its file into
the new, empty collection — the documents table and the Markdown files are the source of truth.
While running, the vectors Milvus Lite still serves from memory are kept first, so the rebuild
embeds nothing; at start-up the shipped runbooks' vectors cover the samples.

Meanwhile ``/healthz`` says "repairing the vector store", the console's banner shows it, and each
lookup says it sees only the documents rebuilt so far (the keyword index, L0, has them all).
"""

from __future__ import annotations

import logging
import time
from typing import Any

from retrieval.l1.lite_files import damaged_files, release, set_aside
from retrieval.l1.store import ChunkStore
from retrieval.l1.vector_census import stored_chunk_pages
from retrieval.lookup.first_import import FirstImport

log = logging.getLogger(__name__)
CONFIRM_S = 0.5  # a damaged file found while running is checked again after this


class StoreRebuild(FirstImport):
    """What is being repaired, for ``/healthz`` and the lookups' note; active from the moment the
    files are set aside until every document is back in the store."""

    ARTIFACT = "vector_store_rebuild"

    def __init__(self) -> None:
        super().__init__()
        self.damaged: list[str] = []
        self.set_aside_in = ""

    def started(self, damaged: list[str], where: str) -> None:
        self.begin()
        self.damaged, self.set_aside_in = damaged, where

    def note(self) -> str:
        done = f"已重建 {self.processed}/{self.total} 个文件" if self.total else "正在准备"
        return (
            f"向量库的文件已损坏，正在修复（损坏的文件已移开，正从文档重建向量库：{done}）："
            "语义检索只覆盖已重建的文档，关键词检索覆盖全部文档；修复完成后再查可能找到更多。"
        )

    def message(self) -> str:
        done = f" ({self.processed}/{self.total} documents)" if self.total else ""
        return (
            f"repairing the vector store: its damaged files were set aside in {self.set_aside_in}"
            f" and it is being rebuilt from the documents{done}; lookups answer from keywords (L0)"
            " and the documents rebuilt so far"
        )

    def view(self) -> dict[str, Any]:
        return {
            "damaged": self.damaged,
            "set_aside_in": self.set_aside_in,
            "processed": self.processed,
            "total": self.total,
        }


def set_aside_if_damaged(store: ChunkStore, *, running: bool) -> tuple[list[str], str] | None:
    """Blocking. When the store's Milvus Lite files are damaged: keep the vectors it still serves
    (``running``), close it, move its files aside; returns (what was damaged, where it went)."""
    if not store.local:
        return None
    damaged = damaged_files(store.uri, store.collection, indexes=not running)
    if damaged and running:  # a compaction may have replaced a listed file meanwhile
        time.sleep(CONFIRM_S)
        again = set(damaged_files(store.uri, store.collection, indexes=False))
        damaged = [d for d in damaged if d in again]
    if not damaged:
        return None
    if running:
        try:  # Milvus Lite still serves the rows it loaded: their vectors need no embedding
            for page in stored_chunk_pages(store):
                store.vector_cache.keep(page)
        except Exception:
            log.warning("could not read the vectors back before the rebuild", exc_info=True)

    def move() -> str:
        release(store.uri)
        return str(set_aside(store.uri, store.collection))

    return damaged, store.reopen(move)
