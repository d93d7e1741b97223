"""The case library: cases filed from sessions marked useful, and the feedback write that files or
retracts them.

Feedback and its case change in one transaction that starts by updating the session row. That
update takes the row's write lock first (MySQL/MariaDB: an InnoDB row lock; SQLite: the database
write lock), so feedback calls on one session run one after another: the case exists exactly when
the session's last feedback is ``useful``, never twice, however many calls race.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncSession
from sqlmodel import col, select

from persistence.models import CaseLibrary, DiagnosisSession, utcnow
from persistence.repository import Page, insert_ignore, paged, row_values

TITLE_CHARS = 100


@dataclass
class FeedbackWrite:
    found: bool  # False: no such session, nothing written
    case: CaseLibrary | None = None  # the session's case after the write
    created: bool = False  # this call filed the case
    removed: bool = False  # this call retracted it


def case_for(row: DiagnosisSession) -> CaseLibrary:
    """The case a useful session files: its question is the problem, its answer the solution."""
    return CaseLibrary(
        case_id=uuid.uuid4().hex,
        session_id=row.session_id,
        title=(row.query or "")[:TITLE_CHARS],
        problem=row.query,
        root_cause=row.answer,
        solution=row.answer,
        category="GENERAL",
        source="AUTO",
    )


async def case_of_session(session: AsyncSession, session_id: str) -> CaseLibrary | None:
    stmt = select(CaseLibrary).where(CaseLibrary.session_id == session_id)
    return (await session.execute(stmt)).scalar_one_or_none()


async def write_feedback(session: AsyncSession, session_id: str, feedback: str) -> FeedbackWrite:
    """Record ``feedback`` on the session and file (``useful``) or retract (anything else) its
    case, in one transaction serialised per session by the update that opens it."""
    now = utcnow()
    locked = await session.execute(
        sa.update(DiagnosisSession)
        .where(col(DiagnosisSession.session_id) == session_id)
        .values(feedback=feedback, feedback_at=now, updated_at=now)
    )
    if not locked.rowcount:
        await session.rollback()
        return FeedbackWrite(found=False)
    if feedback == "useful":
        row = (
            await session.execute(
                select(DiagnosisSession).where(DiagnosisSession.session_id == session_id)
            )
        ).scalar_one()
        inserted = await session.execute(
            insert_ignore(session, CaseLibrary, row_values(case_for(row)))
        )
        case = await case_of_session(session, session_id)
        await session.commit()
        return FeedbackWrite(found=True, case=case, created=bool(inserted.rowcount))
    deleted = await session.execute(
        sa.delete(CaseLibrary).where(col(CaseLibrary.session_id) == session_id)
    )
    await session.commit()
    return FeedbackWrite(found=True, removed=bool(deleted.rowcount))


def _like(text: str) -> str:
    """A LIKE pattern matching ``text`` literally anywhere (``%`` and ``_`` are not wildcards)."""
    escaped = text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


async def list_cases(
    session: AsyncSession, *, q: str | None = None, limit: int = 20, offset: int = 0
) -> Page:
    """Newest first; ``q`` matches title, problem, root cause or solution (case-insensitive for
    Latin letters on both engines; Chinese matches as written)."""
    conds = []
    if q and q.strip():
        pattern = _like(q.strip())
        conds.append(
            sa.or_(
                *(
                    sa.func.lower(col(c)).like(pattern.lower(), escape="\\")
                    for c in (
                        CaseLibrary.title,
                        CaseLibrary.problem,
                        CaseLibrary.root_cause,
                        CaseLibrary.solution,
                    )
                )
            )
        )
    order = [col(CaseLibrary.created_at).desc(), col(CaseLibrary.id).desc()]
    return await paged(session, CaseLibrary, conds, order, limit, offset)


async def get_case(session: AsyncSession, case_id: str) -> CaseLibrary | None:
    stmt = select(CaseLibrary).where(CaseLibrary.case_id == case_id)
    return (await session.execute(stmt)).scalar_one_or_none()
