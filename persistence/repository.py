"""Small async repository functions over the tables. Each takes an ``AsyncSession`` and commits.

Writes keyed by a natural key (session_id, case per session) use a dialect-native "insert, ignore
duplicates" so concurrent or repeated writers never create a second row and never fail on the race.
A run's own rows (steps, tool calls, totals, closing) are written by ``run_rows``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, TypeVar

import sqlalchemy as sa
from sqlalchemy.dialects import mysql, sqlite
from sqlalchemy.ext.asyncio import AsyncSession
from sqlmodel import SQLModel, col, select

from persistence.models import (
    AgentStep,
    CaseLibrary,
    DiagnosisSession,
    KnowledgeDomain,
    ToolInvocation,
    utcnow,
)

M = TypeVar("M", bound=SQLModel)


def insert_ignore(session: AsyncSession, table: type[SQLModel], values: dict[str, Any]) -> Any:
    dialect = session.bind.dialect.name if session.bind else "sqlite"
    tbl = table.__table__  # type: ignore[attr-defined]
    if dialect == "mysql":
        return mysql.insert(tbl).values(values).prefix_with("IGNORE")
    return sqlite.insert(tbl).values(values).on_conflict_do_nothing()


def row_values(obj: SQLModel) -> dict[str, Any]:
    """Column values of a model instance keyed by column name (not attribute name)."""
    table = type(obj).__table__  # type: ignore[attr-defined]
    mapper = sa.inspect(type(obj))
    out: dict[str, Any] = {}
    for attr in mapper.column_attrs:
        column = attr.columns[0]
        value = getattr(obj, attr.key)
        if value is None and column.primary_key:
            continue
        out[column.name] = value
    assert set(out) <= set(table.c.keys())
    return out


async def insert_once(session: AsyncSession, obj: M, **key: Any) -> tuple[M, bool]:
    """Insert ``obj`` unless a row with the unique ``key`` exists; return (row, created)."""
    result = await session.execute(insert_ignore(session, type(obj), row_values(obj)))
    await session.commit()
    created = (result.rowcount or 0) > 0
    stmt = select(type(obj))
    for name, value in key.items():
        stmt = stmt.where(getattr(type(obj), name) == value)
    row = (await session.execute(stmt)).scalar_one()
    return row, created


# --- diagnosis_session -------------------------------------------------------------------------


async def create_session(session: AsyncSession, **fields: Any) -> DiagnosisSession:
    """Create a RUNNING session row; a second call with the same session_id returns the first row."""
    row, _ = await insert_once(session, DiagnosisSession(**fields), session_id=fields["session_id"])
    return row


async def get_session(session: AsyncSession, session_id: str) -> DiagnosisSession | None:
    stmt = select(DiagnosisSession).where(DiagnosisSession.session_id == session_id)
    return (await session.execute(stmt)).scalar_one_or_none()


async def update_session(session: AsyncSession, session_id: str, **fields: Any) -> DiagnosisSession:
    row = await get_session(session, session_id)
    if row is None:
        raise LookupError(f"session {session_id} not found")
    for name, value in fields.items():
        setattr(row, name, value)
    row.updated_at = utcnow()
    await session.commit()
    await session.refresh(row)
    return row


@dataclass
class Page:
    items: list[Any]
    total: int
    limit: int
    offset: int


async def paged(
    session: AsyncSession,
    model: type[SQLModel],
    conds: list[Any],
    order: list[Any],
    limit: int,
    offset: int,
) -> Page:
    count = select(sa.func.count()).select_from(model).where(*conds)
    total = (await session.execute(count)).scalar_one()
    stmt = select(model).where(*conds).order_by(*order).limit(limit).offset(offset)
    items = list((await session.execute(stmt)).scalars())
    return Page(items=items, total=int(total), limit=limit, offset=offset)


async def list_sessions(
    session: AsyncSession,
    *,
    status: str | None = None,
    flow: str | None = None,
    thread_id: str | None = None,
    text: str | None = None,
    created_from: datetime | None = None,
    created_to: datetime | None = None,
    limit: int = 20,
    offset: int = 0,
    origin: str | None = None,
) -> Page:
    """Newest first. ``text`` matches the question or the answer (case-insensitive, ``%`` and ``_``
    taken literally); ``created_from`` / ``created_to`` bound ``created_at`` (inclusive, UTC)."""
    conds = []
    if text:
        conds.append(
            sa.or_(
                col(DiagnosisSession.query).icontains(text, autoescape=True),
                col(DiagnosisSession.answer).icontains(text, autoescape=True),
            )
        )
    if created_from:
        conds.append(col(DiagnosisSession.created_at) >= _utc(created_from))
    if created_to:
        conds.append(col(DiagnosisSession.created_at) <= _utc(created_to))
    if status:
        conds.append(DiagnosisSession.status == status)
    if flow:
        conds.append(DiagnosisSession.agent_flow == flow)
    if thread_id:
        conds.append(DiagnosisSession.thread_id == thread_id)
    if origin:  # who started the runs: user | studio | replay | eval
        conds.append(DiagnosisSession.origin == origin)
    order = [col(DiagnosisSession.created_at).desc(), col(DiagnosisSession.id).desc()]
    return await paged(session, DiagnosisSession, conds, order, limit, offset)


def _utc(moment: datetime) -> datetime:
    """The column type wants aware datetimes; a naive one is taken as UTC."""
    return moment.astimezone(UTC) if moment.tzinfo else moment.replace(tzinfo=UTC)


# --- agent_step / tool_invocation --------------------------------------------------------------


async def list_steps(session: AsyncSession, session_id: str) -> Sequence[AgentStep]:
    stmt = (
        select(AgentStep)
        .where(AgentStep.session_id == session_id)
        .order_by(col(AgentStep.step_index), col(AgentStep.id))
    )
    return list((await session.execute(stmt)).scalars())


async def list_invocations(session: AsyncSession, session_id: str) -> Sequence[ToolInvocation]:
    stmt = (
        select(ToolInvocation)
        .where(ToolInvocation.session_id == session_id)
        .order_by(col(ToolInvocation.id))
    )
    return list((await session.execute(stmt)).scalars())


@dataclass
class SessionTrace:
    session: DiagnosisSession
    steps: list[AgentStep] = field(default_factory=list)
    invocations: list[ToolInvocation] = field(default_factory=list)


async def get_trace(session: AsyncSession, session_id: str) -> SessionTrace | None:
    row = await get_session(session, session_id)
    if row is None:
        return None
    return SessionTrace(
        session=row,
        steps=list(await list_steps(session, session_id)),
        invocations=list(await list_invocations(session, session_id)),
    )


async def relevance_distribution(session: AsyncSession) -> dict[str | None, int]:
    """FS-6: how lookups were judged, across all sessions."""
    rows = await session.execute(
        sa.text(
            "SELECT relevance_level, COUNT(*) FROM tool_invocation "
            "WHERE tool_name='lookup_knowledge' GROUP BY relevance_level"
        )
    )
    return {level: int(n) for level, n in rows.all()}


# --- case_library ------------------------------------------------------------------------------


async def add_case_once(session: AsyncSession, case: CaseLibrary) -> tuple[CaseLibrary, bool]:
    return await insert_once(session, case, session_id=case.session_id)


# --- knowledge_domain --------------------------------------------------------------------------


async def list_domains(session: AsyncSession) -> Sequence[KnowledgeDomain]:
    stmt = select(KnowledgeDomain).order_by(KnowledgeDomain.name)
    return (await session.execute(stmt)).scalars().all()


async def domain_names(session: AsyncSession) -> set[str]:
    return set((await session.execute(select(KnowledgeDomain.name))).scalars())


async def delete_domain(session: AsyncSession, name: str) -> None:
    await session.execute(sa.delete(KnowledgeDomain).where(col(KnowledgeDomain.name) == name))
    await session.commit()


async def save_domain(
    session: AsyncSession, name: str, *, when_to_retrieve: str, source: str, document_count: int
) -> None:
    """Create or update one domain's row. When another worker creates it at the same moment,
    theirs is kept: both were computed from the same documents."""
    stmt = select(KnowledgeDomain).where(KnowledgeDomain.name == name)
    row = (await session.execute(stmt)).scalar_one_or_none()
    if row is None:
        row = KnowledgeDomain(name=name)
        session.add(row)
    row.when_to_retrieve, row.source = when_to_retrieve, source
    row.document_count, row.updated_at = document_count, utcnow()
    try:
        await session.commit()
    except sa.exc.IntegrityError:
        await session.rollback()
