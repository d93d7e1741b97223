"""Repository functions for the knowledge base's rows: ``api_document`` (one per knowledge-base file,
with its import status) and ``knowledge_state`` (the version other workers watch). Each takes an
``AsyncSession``; the writes commit."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncSession
from sqlmodel import col, select

from persistence.models import ApiDocument, DocumentStatus, KnowledgeState, utcnow
from persistence.repository import Page, insert_ignore, paged


async def get_document(session: AsyncSession, doc_id: str) -> ApiDocument | None:
    stmt = select(ApiDocument).where(ApiDocument.doc_id == doc_id)
    return (await session.execute(stmt)).scalar_one_or_none()


async def get_document_by_path(session: AsyncSession, file_path: str) -> ApiDocument | None:
    stmt = select(ApiDocument).where(ApiDocument.file_path == file_path)
    return (await session.execute(stmt)).scalar_one_or_none()


async def all_documents(session: AsyncSession) -> list[ApiDocument]:
    return list((await session.execute(select(ApiDocument))).scalars())


async def documents_with_status(session: AsyncSession, *statuses: str) -> list[ApiDocument]:
    stmt = select(ApiDocument).where(col(ApiDocument.status).in_(statuses))
    return list((await session.execute(stmt.order_by(col(ApiDocument.id)))).scalars())


async def indexed_totals(session: AsyncSession) -> tuple[int, int]:
    """(INDEXED documents that are enabled, the chunks all INDEXED ones count) in one query: the
    catalog holds the first, the vector store the second (a disabled document keeps its vectors)."""
    enabled = sa.func.sum(sa.case((ApiDocument.enabled == sa.true(), 1), else_=0))
    stmt = select(
        sa.func.coalesce(enabled, 0), sa.func.coalesce(sa.func.sum(ApiDocument.chunk_count), 0)
    )
    docs, chunks = (
        await session.execute(stmt.where(ApiDocument.status == DocumentStatus.INDEXED))
    ).one()
    return int(docs), int(chunks)


async def list_documents(
    session: AsyncSession,
    *,
    status: str | None = None,
    category: str | None = None,
    fault_source: str | None = None,
    enabled: bool | None = None,
    q: str | None = None,
    limit: int = 20,
    offset: int = 0,
) -> Page:
    """Newest first; ``q`` matches title or file path (case-insensitive substring); the other
    filters match exactly."""
    conds: list[Any] = []
    if status:
        conds.append(ApiDocument.status == status)
    if category:
        conds.append(ApiDocument.category == category)
    if fault_source:
        conds.append(ApiDocument.fault_source == fault_source)
    if enabled is not None:
        conds.append(ApiDocument.enabled == enabled)
    if q:
        like = f"%{q.lower().replace('%', '').replace('_', '')}%"
        conds.append(
            sa.or_(
                sa.func.lower(ApiDocument.title).like(like),
                sa.func.lower(ApiDocument.file_path).like(like),
            )
        )
    order = [col(ApiDocument.updated_at).desc(), col(ApiDocument.id).desc()]
    return await paged(session, ApiDocument, conds, order, limit, offset)


async def fault_sources(session: AsyncSession) -> list[tuple[str, int]]:
    """Each fault source documents name, with how many, alphabetically."""
    stmt = (
        select(ApiDocument.fault_source, sa.func.count())
        .where(col(ApiDocument.fault_source).is_not(None))
        .group_by(ApiDocument.fault_source)
        .order_by(ApiDocument.fault_source)
    )
    return [(str(name), int(n)) for name, n in (await session.execute(stmt)).all()]


async def document_stats(session: AsyncSession) -> dict[str, Any]:
    by_status = dict(
        (
            await session.execute(
                select(ApiDocument.status, sa.func.count()).group_by(ApiDocument.status)
            )
        ).all()
    )
    by_category = dict(
        (
            await session.execute(
                select(ApiDocument.category, sa.func.count()).group_by(ApiDocument.category)
            )
        ).all()
    )
    last = (await session.execute(select(sa.func.max(col(ApiDocument.indexed_at))))).scalar_one()
    return {
        "documents": sum(by_status.values()),
        "by_status": {st.value: int(by_status.get(st.value, 0)) for st in DocumentStatus},
        "by_category": {k: int(v) for k, v in sorted(by_category.items())},
        "knowledge_version": await knowledge_version(session),
        "last_indexed_at": last.isoformat() if last else None,
    }


async def mark_pending(
    session: AsyncSession, new: Sequence[ApiDocument], known: Sequence[ApiDocument]
) -> None:
    """Queue files for import in one transaction: ``new`` rows are added, ``known`` ones set back
    to PENDING."""
    session.add_all(new)
    if known:
        await session.execute(
            sa.update(ApiDocument)
            .where(col(ApiDocument.id).in_([row.id for row in known]))
            .values(status=DocumentStatus.PENDING, updated_at=utcnow())
        )
    await session.commit()


async def start_import(
    session: AsyncSession, fresh: ApiDocument, *, content_hash: str, file_size: int
) -> ApiDocument:
    """The row of ``fresh.file_path`` (``fresh`` itself when there is none yet), now PROCESSING."""
    row = await get_document_by_path(session, fresh.file_path)
    if row is None:
        row = fresh
        session.add(row)
    row.status, row.updated_at = DocumentStatus.PROCESSING, utcnow()
    row.content_hash, row.file_size = content_hash, file_size
    await session.commit()
    return row


async def update_document(session: AsyncSession, doc_id: str, **fields: Any) -> ApiDocument:
    row = await get_document(session, doc_id)
    if row is None:
        raise LookupError(f"document {doc_id} not found")
    for name, value in fields.items():
        setattr(row, name, value)
    row.updated_at = utcnow()
    await session.commit()
    await session.refresh(row)
    return row


async def delete_document(session: AsyncSession, doc_id: str) -> None:
    await session.execute(sa.delete(ApiDocument).where(col(ApiDocument.doc_id) == doc_id))
    await session.commit()


async def knowledge_version(session: AsyncSession) -> int:
    row = await session.get(KnowledgeState, 1)
    return row.version if row else 0


async def bump_knowledge_version(session: AsyncSession) -> int:
    """Atomically increment the knowledge version (row created on first use)."""
    await session.execute(
        insert_ignore(session, KnowledgeState, {"id": 1, "version": 0, "updated_at": utcnow()})
    )
    await session.execute(
        sa.update(KnowledgeState)
        .where(KnowledgeState.id == 1)
        .values(version=KnowledgeState.version + 1, updated_at=utcnow())
    )
    await session.commit()
    return await knowledge_version(session)
