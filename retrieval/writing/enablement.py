"""Disable a document without deleting it, or enable it again.

A disabled document keeps its row, its file and its vectors; it leaves the catalog (so L0 cannot
match it) and its doc_id is filtered out of L1 searches in Milvus. Enabling it puts the stored
catalog entry back: nothing is parsed or embedded again.
"""

from __future__ import annotations

from persistence import document_repository as docs_repo
from persistence.models import ApiDocument, DocumentStatus
from retrieval.l0.catalog import DocInfo
from retrieval.writing.errors import DocumentNotFound
from retrieval.writing.ingestion import IngestionService


async def set_enabled(ingestion: IngestionService, doc_id: str, enabled: bool) -> ApiDocument:
    """The document's row after the change (unchanged when it already was so)."""
    async with ingestion.writing():
        async with ingestion.db.session() as s:
            row = await docs_repo.get_document(s, doc_id)
            if row is None:
                raise DocumentNotFound(f"document {doc_id} does not exist")
            if row.enabled == enabled:
                return row
            row = await docs_repo.update_document(s, doc_id, enabled=enabled)
        catalog = ingestion.catalog
        if not enabled:
            catalog.disable(doc_id)
        elif row.status == DocumentStatus.INDEXED:
            catalog.put(
                DocInfo.from_row(doc_id, row.file_path, row.title, row.category, row.doc_metadata)
            )
        await ingestion.changed({row.category})
        return row
