"""The read side of the knowledge base: builds the in-memory catalog (and its L0 index) from the
INDEXED, enabled rows (the disabled ones are only listed, to be filtered out of L1) and keeps it at the database's knowledge version, which another worker's import bumps.

Lookups use it; only ingestion writes documents.
"""

from __future__ import annotations

from persistence import document_repository as docs_repo
from persistence.db import Database
from persistence.models import DocumentStatus
from retrieval.l0.catalog import DocInfo, DocumentCatalog


class CatalogLoader:
    def __init__(self, db: Database, catalog: DocumentCatalog) -> None:
        self.db, self.catalog = db, catalog

    async def load(self) -> int:
        """Rebuild the catalog from the INDEXED rows; returns the knowledge version it reflects."""
        async with self.db.session() as s:
            version = await docs_repo.knowledge_version(s)
            rows = await docs_repo.documents_with_status(s, DocumentStatus.INDEXED)
        docs = [
            DocInfo.from_row(r.doc_id, r.file_path, r.title, r.category, r.doc_metadata)
            for r in rows
            if r.enabled
        ]
        disabled = [r.doc_id for r in rows if not r.enabled]
        self.catalog.replace_all(docs, version, disabled)
        return version

    async def refresh_if_stale(self) -> bool:
        """Cheap per-lookup check (one indexed SELECT) that keeps several workers in step."""
        async with self.db.session() as s:
            version = await docs_repo.knowledge_version(s)
        if version != self.catalog.version:
            await self.load()
            return True
        return False
