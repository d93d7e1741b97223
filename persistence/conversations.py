"""Conversation leases: one run at a time per conversation thread, across workers, on SQLite and
MySQL alike.

Two turns running at once on one LangGraph thread both start from the same checkpoint and fork it;
the thread keeps one branch and the other question is silently lost. So a run takes its thread's
row in ``conversation_lease`` right after its session is created: one conditional UPDATE (a free or
expired row) or, for a thread never seen, one INSERT (the primary key lets only one writer in).
The row is renewed with the session's lease while the run streams and freed when it closes. It
is also free once the session holding it is no longer RUNNING under a live lease (its worker died
and the session lease ran out or was swept), so a resume or the next turn need not wait for this
row's own expiry; hence the holder's session is created (committed) before the row is claimed.
"""

from __future__ import annotations

import math
from datetime import datetime, timedelta

import sqlalchemy as sa
from sqlalchemy.exc import IntegrityError, OperationalError
from sqlalchemy.ext.asyncio import AsyncSession

from persistence.models import ConversationLease, DiagnosisSession, SessionStatus, utcnow
from persistence.run_rows import aware

ATTEMPTS = 3  # a row that expires between our UPDATE and INSERT, or a MySQL deadlock, is retried


class ConversationBusy(Exception):
    """Another turn of this conversation is running right now; ``retry_after_s``: when its lease
    ends at the latest."""

    code = "conversation_busy"

    def __init__(self, thread_id: str, session_id: str | None, retry_after_s: int) -> None:
        self.thread_id, self.session_id, self.retry_after_s = thread_id, session_id, retry_after_s
        running = f" (session {session_id})" if session_id else ""
        super().__init__(
            f"conversation {thread_id} is answering another question right now{running}; one "
            "question runs at a time per conversation, so this one was not started — retry "
            "when that answer is done, or use a new id for a separate conversation"
        )


async def _take_free(
    s: AsyncSession, thread_id: str, owner: str, session_id: str, ttl_s: float
) -> bool:
    now = utcnow()
    result = await s.execute(
        sa.update(ConversationLease)
        .where(
            ConversationLease.thread_id == thread_id,
            sa.or_(
                ConversationLease.lease_until.is_(None),
                ConversationLease.lease_until < now,
                ConversationLease.session_id == session_id,  # resuming the holder's own session
                ~sa.exists().where(
                    DiagnosisSession.session_id == ConversationLease.session_id,
                    DiagnosisSession.status == SessionStatus.RUNNING,
                    DiagnosisSession.lease_until >= now,
                ),
            ),
        )
        .values(
            owner=owner,
            session_id=session_id,
            lease_until=now + timedelta(seconds=ttl_s),
            updated_at=now,
        )
    )
    await s.commit()  # before the INSERT: a MySQL gap lock held across both would deadlock
    return (result.rowcount or 0) == 1


async def claim(s: AsyncSession, thread_id: str, owner: str, session_id: str, ttl_s: float) -> bool:
    """Take the thread for ``owner`` (whose session ``session_id`` exists, RUNNING and leased);
    False while another run holds it."""
    for attempt in range(ATTEMPTS):
        try:
            if await _take_free(s, thread_id, owner, session_id, ttl_s):
                return True
            if attempt:  # the INSERT found the row, and it is not free: held
                return False
            now = utcnow()
            s.add(
                ConversationLease(
                    thread_id=thread_id,
                    owner=owner,
                    session_id=session_id,
                    lease_until=now + timedelta(seconds=ttl_s),
                    updated_at=now,
                )
            )
            await s.commit()
            return True
        except IntegrityError:  # the row exists: held, or freed meanwhile (the UPDATE decides)
            await s.rollback()
        except OperationalError as exc:
            await s.rollback()
            if "deadlock" not in str(exc).lower():
                raise
    return False


async def holder(s: AsyncSession, thread_id: str) -> tuple[str, datetime] | None:
    """(session id, lease end) of the run holding the thread, or None when it is free."""
    row = await s.get(ConversationLease, thread_id, populate_existing=True)
    if row is None or row.lease_until is None or aware(row.lease_until) < utcnow():
        return None
    return row.session_id, aware(row.lease_until)


async def busy(s: AsyncSession, thread_id: str) -> ConversationBusy:
    """The refusal for a thread someone else holds, with how long until its lease would end."""
    held = await holder(s, thread_id)
    left = (held[1] - utcnow()).total_seconds() if held else 1
    return ConversationBusy(thread_id, held[0] if held else None, max(1, math.ceil(left)))


async def renew(s: AsyncSession, thread_id: str, owner: str, ttl_s: float) -> bool:
    now = utcnow()
    result = await s.execute(
        sa.update(ConversationLease)
        .where(ConversationLease.thread_id == thread_id, ConversationLease.owner == owner)
        .values(lease_until=now + timedelta(seconds=ttl_s), updated_at=now)
    )
    await s.commit()
    return (result.rowcount or 0) == 1


async def release(s: AsyncSession, thread_id: str, owner: str) -> None:
    await s.execute(
        sa.update(ConversationLease)
        .where(ConversationLease.thread_id == thread_id, ConversationLease.owner == owner)
        .values(lease_until=None, updated_at=utcnow())
    )
    await s.commit()


async def discard_session(s: AsyncSession, session_id: str) -> None:
    """Remove the session of a turn refused as busy: it was created an instant before and never
    ran, so nothing else refers to it."""
    await s.execute(sa.delete(DiagnosisSession).where(DiagnosisSession.session_id == session_id))
    await s.commit()
