"""A run's rows: its model steps and tool calls written once under their idempotency keys, its
session's totals kept with them, and the session closed with totals recounted from the rows.

Totals equal the rows at every moment — while the run goes, after a crash, and on every ending.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, TypeVar

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncSession
from sqlmodel import SQLModel, select

from persistence.models import AgentStep, DiagnosisSession, SessionStatus, ToolInvocation, utcnow
from persistence.repository import get_session, insert_ignore, row_values

M = TypeVar("M", bound=SQLModel)


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
    values = row_values(obj)
    result = await session.execute(insert_ignore(session, type(obj), values))
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
