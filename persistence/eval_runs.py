"""Eval runs and their per-scenario results: written by ``python -m evals run``, read by the console.

A run row is created RUNNING before the first scenario, each scenario's result is stored as it is
judged (an interrupted run keeps what it judged), and the run is closed DONE or FAILED with its
totals. Results are keyed (run, scenario, repeat), so storing one twice changes nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncSession
from sqlmodel import col, select

from persistence.models import EvalResult, EvalRun, EvalRunStatus, utcnow
from persistence.repository import Page, insert_ignore, paged, row_values


async def create_run(session: AsyncSession, run: EvalRun) -> EvalRun:
    session.add(run)
    await session.commit()
    await session.refresh(run)
    return run


async def add_result(session: AsyncSession, result: EvalResult) -> bool:
    """Store one scenario's result; ``False`` when that (run, scenario, repeat) was stored."""
    done = await session.execute(insert_ignore(session, EvalResult, row_values(result)))
    await session.commit()
    return bool(done.rowcount)


async def finish_run(
    session: AsyncSession,
    run_id: str,
    *,
    status: EvalRunStatus,
    error: str | None = None,
    **totals: Any,
) -> EvalRun | None:
    """Close the run with its totals (``passed``, ``pass_rate``, ``summary``, …)."""
    row = await get_run(session, run_id)
    if row is None:
        return None
    for name, value in totals.items():
        setattr(row, name, value)
    row.status, row.error_message, row.completed_at = status, error, utcnow()
    await session.commit()
    await session.refresh(row)
    return row


async def get_run(session: AsyncSession, run_id: str) -> EvalRun | None:
    stmt = select(EvalRun).where(EvalRun.run_id == run_id)
    return (await session.execute(stmt)).scalar_one_or_none()


async def list_runs(session: AsyncSession, *, limit: int = 20, offset: int = 0) -> Page:
    """Newest first."""
    order = [col(EvalRun.created_at).desc(), col(EvalRun.id).desc()]
    return await paged(session, EvalRun, [], order, limit, offset)


async def run_results(session: AsyncSession, run_id: str) -> Sequence[EvalResult]:
    """A run's results: failures first, then by scenario and repeat."""
    stmt = (
        select(EvalResult)
        .where(EvalResult.run_id == run_id)
        .order_by(col(EvalResult.passed), col(EvalResult.scenario_id), col(EvalResult.repeat_index))
    )
    return list((await session.execute(stmt)).scalars())


async def scenario_history(
    session: AsyncSession, scenario_id: str, *, limit: int = 20
) -> Sequence[tuple[EvalResult, EvalRun]]:
    """The latest results of one scenario across runs, with their run (newest first)."""
    stmt = (
        sa.select(EvalResult, EvalRun)
        .join(EvalRun, col(EvalRun.run_id) == col(EvalResult.run_id))
        .where(EvalResult.scenario_id == scenario_id)
        .order_by(col(EvalRun.created_at).desc(), col(EvalResult.repeat_index))
        .limit(limit)
    )
    return [(r, run) for r, run in (await session.execute(stmt)).all()]
