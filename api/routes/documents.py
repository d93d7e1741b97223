"""Documents: upload (with the seed's fields), list (filter, search, paginate), detail with chunks,
enable/disable, re-index, delete."""

from __future__ import annotations

from dataclasses import asdict
from typing import Annotated, Any

from fastapi import APIRouter, File, Form, Path, Query, UploadFile
from sqlalchemy.ext.asyncio import AsyncSession

from api.deps import Guarded, JsonBody, KnowledgeDep, SessionDep
from api.errors import ApiError, responses
from api.schemas import (
    Chunk,
    Deleted,
    Document,
    DocumentDetail,
    DocumentPage,
    DocumentPatch,
    FaultSourceCount,
    FileResultOut,
    UploadResponse,
)
from persistence import document_repository as docs_repo
from persistence.models import DocumentStatus
from retrieval.parsing.doc_fields import MAX_LENGTHS, DocFields, clean_text
from retrieval.writing.enablement import set_enabled

router = APIRouter(prefix="/api/documents", tags=["documents"], dependencies=Guarded)
ERRORS = responses(400, 401, 403, 404, 409, 413, 415, 422, 503, 507)
StatusFilter = Annotated[
    DocumentStatus | None, Query(description="PENDING, PROCESSING, INDEXED or FAILED")
]
MAX_FAULT_SOURCE = MAX_LENGTHS["fault_source"]
FaultSourceFilter = Annotated[
    str | None, Query(alias="faultSource", max_length=MAX_FAULT_SOURCE, description="故障源, exact")
]
TOKENS = "in embedding-model tokens; the model's window is the limit (docs/api.md)"


async def _document(session: AsyncSession, doc_id: str) -> Any:
    row = await docs_repo.get_document(session, doc_id)
    if row is None:
        raise ApiError(404, "document_not_found", f"document {doc_id} does not exist")
    return row


@router.post("/upload", status_code=201, response_model=UploadResponse, responses=ERRORS)
async def upload(
    kb: KnowledgeDep,
    session: SessionDep,
    file: Annotated[UploadFile, File(description=".md, .markdown or .txt")],
    category: Annotated[str, Form(max_length=64, description="lowercase, e.g. infrastructure")],
    replace: Annotated[bool, Form()] = False,
    fault_source: Annotated[
        str | None, Form(alias="faultSource", max_length=MAX_FAULT_SOURCE, description="故障源")
    ] = None,
    api_name: Annotated[
        str | None,
        Form(alias="apiName", max_length=MAX_LENGTHS["api_name"], description="接口名称"),
    ] = None,
    version: Annotated[
        str | None, Form(max_length=MAX_LENGTHS["version"], description="版本 (default v1.0)")
    ] = None,
    chunk_size: Annotated[
        int | None, Form(alias="chunkSize", ge=1, le=100_000, description=f"分块大小, {TOKENS}")
    ] = None,
    chunk_overlap: Annotated[
        int | None, Form(alias="chunkOverlap", ge=0, le=100_000, description=f"重叠, {TOKENS}")
    ] = None,
) -> Any:
    """Store the file under ``knowledge_base/<category>/`` and index it (L0 + L1). The form's
    fields win over the same keys in the file's frontmatter."""
    ing = kb.ingestion
    # Name, category and declared size are checked before the body is read.
    ing.check_upload(file.filename or "", category, file.size)
    fields = DocFields(
        clean_text(fault_source),
        clean_text(api_name),
        clean_text(version),
        chunk_size,
        chunk_overlap,
    )
    data = await file.read(ing.max_upload_bytes + 1)
    result = await ing.upload(file.filename or "", data, category, replace=replace, fields=fields)
    doc = await _document(session, result.doc_id) if result.doc_id else None
    return UploadResponse(document=doc, result=FileResultOut(**asdict(result)))


@router.get("", response_model=DocumentPage, responses=ERRORS)
async def list_documents(
    session: SessionDep,
    status: StatusFilter = None,
    category: Annotated[str | None, Query(max_length=64)] = None,
    fault_source: FaultSourceFilter = None,
    enabled: Annotated[
        bool | None, Query(description="only enabled (true) or disabled (false)")
    ] = None,
    q: Annotated[
        str | None, Query(max_length=200, description="search in title and file path")
    ] = None,
    page: Annotated[int, Query(ge=1, le=100000)] = 1,
    page_size: Annotated[int, Query(alias="pageSize", ge=1, le=200)] = 20,
) -> Any:
    result = await docs_repo.list_documents(
        session,
        status=status.value if status else None,
        category=category,
        fault_source=fault_source,
        enabled=enabled,
        q=q,
        limit=page_size,
        offset=(page - 1) * page_size,
    )
    return DocumentPage(items=result.items, total=result.total, page=page, page_size=page_size)


@router.get("/faultSources", response_model=list[FaultSourceCount], responses=ERRORS)
async def list_fault_sources(session: SessionDep) -> Any:
    """Every fault source documents name, with how many documents (for a filter's choices)."""
    pairs = await docs_repo.fault_sources(session)
    return [FaultSourceCount(fault_source=name, documents=n) for name, n in pairs]


@router.get("/faultSource/{fault_source}", response_model=DocumentPage, responses=ERRORS)
async def by_fault_source(
    session: SessionDep,
    fault_source: Annotated[str, Path(max_length=MAX_FAULT_SOURCE)],
    page: Annotated[int, Query(ge=1, le=100000)] = 1,
    page_size: Annotated[int, Query(alias="pageSize", ge=1, le=200)] = 20,
) -> Any:
    """The seed's path: the documents of one fault source (as ``GET /api/documents?faultSource=``)."""
    return await list_documents(session, fault_source=fault_source, page=page, page_size=page_size)


@router.get("/{doc_id}", response_model=DocumentDetail, responses=ERRORS)
async def get_document(kb: KnowledgeDep, session: SessionDep, doc_id: str) -> Any:
    """Metadata, status, error and the indexed chunks with their breadcrumbs."""
    row = await _document(session, doc_id)
    await session.close()  # the read is done: no connection held while the vector store answers
    stored = await kb.stored_chunks(doc_id)  # the store being down must not hide the document
    detail = DocumentDetail.model_validate(row)
    detail.chunks = [_chunk(c) for c in stored.chunks]
    if stored.unavailable:
        detail.chunks_unavailable = f"chunks are unavailable: {stored.unavailable}"
    return detail


def _chunk(stored: dict[str, Any]) -> Chunk:
    """A stored chunk as shown: the text without its breadcrumb line (the breadcrumb is shown
    apart), the token count of what was embedded."""
    crumb, indexed = stored.get("breadcrumb", ""), str(stored.get("text", ""))
    text = indexed.removeprefix(f"{crumb}\n\n") if crumb else indexed
    return Chunk(
        index=stored["chunk_index"], breadcrumb=crumb, text=text, token_count=stored["token_count"]
    )


@router.patch("/{doc_id}", response_model=Document, dependencies=JsonBody, responses=ERRORS)
async def patch_document(kb: KnowledgeDep, doc_id: str, body: DocumentPatch) -> Any:
    """``{"enabled": false}`` keeps the document but no lookup (L0 or L1) returns it any more;
    ``true`` brings it back without re-embedding."""
    return await set_enabled(kb.ingestion, doc_id, body.enabled)


@router.post("/{doc_id}/reindex", response_model=UploadResponse, responses=ERRORS)
async def reindex(kb: KnowledgeDep, session: SessionDep, doc_id: str) -> Any:
    result = await kb.ingestion.reindex(doc_id)
    return UploadResponse(
        document=await _document(session, doc_id), result=FileResultOut(**asdict(result))
    )


@router.delete("/{doc_id}", response_model=Deleted, responses=ERRORS)
async def delete_document(kb: KnowledgeDep, doc_id: str) -> Any:
    """Removes the row, its vectors, its L0 entries and its file, together."""
    await kb.ingestion.delete(doc_id)
    return Deleted(deleted=doc_id)
