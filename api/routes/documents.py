"""Documents: upload, list (filter, search, paginate), detail with chunks, re-index, delete."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import asdict
from typing import Annotated, Any

from fastapi import APIRouter, File, Form, Query, UploadFile

from api.deps import Guarded, ServicesDep
from api.errors import ApiError, responses
from api.schemas import (
    Chunk,
    DocumentDetail,
    DocumentPage,
    FileResultOut,
    UploadResponse,
)
from persistence import document_repository as docs_repo
from persistence.models import DocumentStatus
from retrieval import failures

log = logging.getLogger(__name__)
router = APIRouter(prefix="/api/documents", tags=["documents"], dependencies=Guarded)
ERRORS = responses(400, 401, 403, 404, 409, 413, 415, 422, 503, 507)
StatusFilter = Annotated[
    DocumentStatus | None, Query(description="PENDING, PROCESSING, INDEXED or FAILED")
]


async def _document(services: Any, doc_id: str) -> Any:
    async with services.db.session() as s:
        row = await docs_repo.get_document(s, doc_id)
    if row is None:
        raise ApiError(404, "document_not_found", f"document {doc_id} does not exist")
    return row


@router.post("/upload", status_code=201, response_model=UploadResponse, responses=ERRORS)
async def upload(
    services: ServicesDep,
    file: Annotated[UploadFile, File(description=".md, .markdown or .txt")],
    category: Annotated[str, Form(max_length=64, description="lowercase, e.g. infrastructure")],
    replace: Annotated[bool, Form()] = False,
) -> Any:
    """Store the file under ``knowledge_base/<category>/`` and index it (L0 + L1)."""
    ing = services.kb.ingestion
    # Name, category and declared size are checked before the body is read.
    ing.check_upload(file.filename or "", category, file.size)
    data = await file.read(ing.max_upload_bytes + 1)
    result = await ing.upload(file.filename or "", data, category, replace=replace)
    doc = await _document(services, result.doc_id) if result.doc_id else None
    return UploadResponse(document=doc, result=FileResultOut(**asdict(result)))


@router.get("", response_model=DocumentPage, responses=ERRORS)
async def list_documents(
    services: ServicesDep,
    status: StatusFilter = None,
    category: Annotated[str | None, Query(max_length=64)] = None,
    q: Annotated[
        str | None, Query(max_length=200, description="search in title and file path")
    ] = None,
    page: Annotated[int, Query(ge=1, le=100000)] = 1,
    page_size: Annotated[int, Query(alias="pageSize", ge=1, le=200)] = 20,
) -> Any:
    async with services.db.session() as s:
        result = await docs_repo.list_documents(
            s,
            status=status.value if status else None,
            category=category,
            q=q,
            limit=page_size,
            offset=(page - 1) * page_size,
        )
    return DocumentPage(items=result.items, total=result.total, page=page, page_size=page_size)


@router.get("/{doc_id}", response_model=DocumentDetail, responses=ERRORS)
async def get_document(services: ServicesDep, doc_id: str) -> Any:
    """Metadata, status, error and the indexed chunks with their breadcrumbs."""
    row = await _document(services, doc_id)
    unavailable = None
    try:
        rows = await asyncio.to_thread(services.kb.store.chunks_of, doc_id)
    except Exception as exc:  # the vector store being down must not hide the document
        log.warning("chunks of %s unavailable", doc_id, exc_info=True)
        reason = failures.describe(exc, vector_store=services.kb.store.uri)
        rows, unavailable = [], f"chunks are unavailable: {reason}"
    chunks = [
        Chunk(
            index=r["chunk_index"], breadcrumb=r.get("breadcrumb", ""), text=str(r.get("text", ""))
        )
        for r in rows
    ]
    detail = DocumentDetail.model_validate(row)
    detail.chunks = chunks
    detail.chunks_unavailable = unavailable
    return detail


@router.post("/{doc_id}/reindex", response_model=UploadResponse, responses=ERRORS)
async def reindex(services: ServicesDep, doc_id: str) -> Any:
    result = await services.kb.ingestion.reindex(doc_id)
    return UploadResponse(
        document=await _document(services, doc_id), result=FileResultOut(**asdict(result))
    )


@router.delete("/{doc_id}", responses=ERRORS)
async def delete_document(services: ServicesDep, doc_id: str) -> dict[str, str]:
    """Removes the row, its vectors, its L0 entries and its file, together."""
    await services.kb.ingestion.delete(doc_id)
    return {"deleted": doc_id}
