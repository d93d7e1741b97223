"""Small async repository functions over the tables. Each takes an ``AsyncSession`` and commits.

Writes keyed by a natural key (session_id, step_key, call_key, case per session) use a dialect-native
"insert, ignore duplicates" so concurrent or repeated writers never create a second row and never
fail on the race.
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
    ApiDocument,
    CaseLibrary,
    DiagnosisSession,
    DocumentStatus,
    KnowledgeDomain,
    KnowledgeState,
    SessionStatus,
    ToolInvocation,
    utcnow,
)

M = TypeVar("M", bound=SQLModel)


def _insert_ignore(session: AsyncSession, table: type[SQLModel], values: dict[str, Any]) -> Any:
    dialect = session.bind.dialect.name if session.bind else "sqlite"
    tbl = table.__table__  # type: ignore[attr-defined]
    if dialect == "mysql":
        return mysql.insert(tbl).values(values).prefix_with("IGNORE")
    return sqlite.insert(tbl).values(values).on_conflict_do_nothing()


def _row_values(obj: SQLModel) -> dict[str, Any]:
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
    result = await session.execute(_insert_ignore(session, type(obj), _row_values(obj)))
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


def aware(moment: datetime) -> datetime:
    """SQLite and MySQL hand datetimes back without their zone; every stored time is UTC."""
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def recounted_totals() -> dict[str, Any]:
    """Column values recounting a session's totals from its rows, for an UPDATE of
    ``diagnosis_session`` (the subqueries correlate to the row being updated)."""
    sid = DiagnosisSession.session_id
    steps = select(sa.func.count()).where(AgentStep.session_id == sid)
    tokens = select(sa.func.coalesce(sa.func.sum(AgentStep.token_count), 0)).where(
        AgentStep.session_id == sid
    )
    tools = select(sa.func.count()).where(ToolInvocation.session_id == sid)
    return {
        "total_steps": steps.scalar_subquery(),
        "total_tokens": tokens.scalar_subquery(),
        "total_tool_calls": tools.scalar_subquery(),
    }


async def finish_session(
    session: AsyncSession,
    session_id: str,
    *,
    status: SessionStatus,
    answer: str | None = None,
    error_message: str | None = None,
    owner: str | None = None,
) -> bool:
    """Close a run, recounting its totals from its rows and giving up its lease.

    With ``owner``, only while that run attempt still holds the lease: a worker that lost it (the
    session was swept and resumed elsewhere) must not overwrite the newer run's record. Returns
    whether the row was written."""
    row = await get_session(session, session_id)
    if row is None:
        raise LookupError(f"session {session_id} not found")
    now = utcnow()
    stmt = sa.update(DiagnosisSession).where(DiagnosisSession.session_id == session_id)
    if owner is not None:
        stmt = stmt.where(DiagnosisSession.lease_owner == owner)
    result = await session.execute(
        stmt.values(
            status=status,
            answer=answer,
            error_message=error_message,
            total_duration_ms=int((now - aware(row.created_at)).total_seconds() * 1000),
            completed_at=now,
            updated_at=now,
            lease_until=None,
            **recounted_totals(),
        )
    )
    await session.commit()
    return (result.rowcount or 0) > 0


async def delete_run_rows(session: AsyncSession, session_id: str) -> int:
    """Forget a run's steps and tool calls (it starts again from its question: no checkpoint of it
    was stored, so its rows match nothing that will be re-run). Returns how many rows went."""
    n = 0
    for model in (AgentStep, ToolInvocation):
        result = await session.execute(sa.delete(model).where(model.session_id == session_id))
        n += int(result.rowcount or 0)
    await session.execute(
        sa.update(DiagnosisSession)
        .where(DiagnosisSession.session_id == session_id)
        .values(total_steps=0, total_tokens=0, total_tool_calls=0)
    )
    await session.commit()
    return n


@dataclass
class Page:
    items: list[Any]
    total: int
    limit: int
    offset: int


async def _page(
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
    limit: int = 20,
    offset: int = 0,
) -> Page:
    conds = []
    if status:
        conds.append(DiagnosisSession.status == status)
    if flow:
        conds.append(DiagnosisSession.agent_flow == flow)
    if thread_id:
        conds.append(DiagnosisSession.thread_id == thread_id)
    order = [col(DiagnosisSession.created_at).desc(), col(DiagnosisSession.id).desc()]
    return await _page(session, DiagnosisSession, conds, order, limit, offset)


# --- agent_step / tool_invocation --------------------------------------------------------------


async def _record_once(
    session: AsyncSession,
    obj: M,
    key: tuple[str, str],
    keep: tuple[str, ...],
    counts: dict[str, Any],
) -> tuple[M, bool]:
    """Write one row of a run under its idempotency key, with the session's totals in the same
    transaction, so totals equal rows at every moment (a crash included).

    A re-executed task (a resumed run redoing the step a crash cut short) arrives with the same key:
    its content replaces the first attempt's in place — same row, same position (``keep``) — so
    the records say what the checkpoint holds. Totals are bumped, not recounted: a recount would
    read the other rows' tables while holding the session row, which deadlocks on MySQL when two
    rows of one session are written at once."""
    table = type(obj).__table__  # type: ignore[attr-defined]
    values = _row_values(obj)
    result = await session.execute(_insert_ignore(session, type(obj), values))
    created = (result.rowcount or 0) > 0
    where = [table.c[k] == values[k] for k in key]
    if created:
        await session.execute(
            sa.update(DiagnosisSession)
            .where(DiagnosisSession.session_id == values["session_id"])
            .values({name: getattr(DiagnosisSession, name) + n for name, n in counts.items()})
        )
    else:
        skip = {*key, *keep, "id", "created_at"}
        await session.execute(
            sa.update(table)
            .where(*where)
            .values({k: v for k, v in values.items() if k not in skip})
        )
    await session.commit()
    row = (await session.execute(select(type(obj)).where(*where))).scalar_one()
    return row, created


async def append_step(session: AsyncSession, step: AgentStep) -> tuple[AgentStep, bool]:
    counts = {"total_steps": 1, "total_tokens": step.token_count or 0}
    return await _record_once(session, step, ("session_id", "step_key"), ("step_index",), counts)


async def append_invocation(
    session: AsyncSession, inv: ToolInvocation
) -> tuple[ToolInvocation, bool]:
    counts = {"total_tool_calls": 1}
    return await _record_once(session, inv, ("session_id", "call_key"), (), counts)


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


# --- api_document / knowledge_state ------------------------------------------------------------


async def get_document(session: AsyncSession, doc_id: str) -> ApiDocument | None:
    stmt = select(ApiDocument).where(ApiDocument.doc_id == doc_id)
    return (await session.execute(stmt)).scalar_one_or_none()


async def get_document_by_path(session: AsyncSession, file_path: str) -> ApiDocument | None:
    stmt = select(ApiDocument).where(ApiDocument.file_path == file_path)
    return (await session.execute(stmt)).scalar_one_or_none()


async def list_documents(
    session: AsyncSession,
    *,
    status: str | None = None,
    category: str | None = None,
    q: str | None = None,
    limit: int = 20,
    offset: int = 0,
) -> Page:
    """Newest first; ``q`` matches title or file path (case-insensitive substring)."""
    conds = []
    if status:
        conds.append(ApiDocument.status == status)
    if category:
        conds.append(ApiDocument.category == category)
    if q:
        like = f"%{q.lower().replace('%', '').replace('_', '')}%"
        conds.append(
            sa.or_(
                sa.func.lower(ApiDocument.title).like(like),
                sa.func.lower(ApiDocument.file_path).like(like),
            )
        )
    order = [col(ApiDocument.updated_at).desc(), col(ApiDocument.id).desc()]
    return await _page(session, ApiDocument, conds, order, limit, offset)


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


async def knowledge_version(session: AsyncSession) -> int:
    row = await session.get(KnowledgeState, 1)
    return row.version if row else 0


async def bump_knowledge_version(session: AsyncSession) -> int:
    """Atomically increment the knowledge version (row created on first use)."""
    await session.execute(
        _insert_ignore(session, KnowledgeState, {"id": 1, "version": 0, "updated_at": utcnow()})
    )
    await session.execute(
        sa.update(KnowledgeState)
        .where(KnowledgeState.id == 1)
        .values(version=KnowledgeState.version + 1, updated_at=utcnow())
    )
    await session.commit()
    return await knowledge_version(session)
