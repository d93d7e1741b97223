"""Run leases on ``diagnosis_session``: one run of a session at a time, across workers, on SQLite
and MySQL alike.

A run attempt takes the lease with one conditional UPDATE — of two workers racing for it, exactly
one sees a row count of 1 — renews it while the run streams, and gives it up when it closes the
session (``run_rows.finish_session``). A RUNNING session whose lease ran out belonged to a worker
that died or stalled: ``sweep_expired`` closes it as FAILED, and it can be resumed.

Times come from the workers' clocks (UTC). Keep them in NTP sync; the lease length absorbs small
skew.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import os
import socket
import uuid
from collections.abc import AsyncIterator, Collection, Iterator
from datetime import datetime, timedelta
from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncSession

from persistence import conversations
from persistence.db import Database
from persistence.models import DiagnosisSession, SessionStatus, utcnow
from persistence.repository import get_session
from persistence.run_rows import aware, recounted_totals

log = logging.getLogger(__name__)

INTERRUPTED = (
    "interrupted: the worker running this session stopped (crash, kill or restart) before it "
    "finished; resume it to continue from its last checkpoint"
)


def new_owner() -> str:
    """A name for one run attempt: the worker (host, pid) plus a random part."""
    return f"{socket.gethostname()[:32]}:{os.getpid()}:{uuid.uuid4().hex[:12]}"


def lease_fields(owner: str, ttl_s: float, now: datetime | None = None) -> dict[str, Any]:
    """The columns of a lease held by ``owner`` for ``ttl_s`` from ``now``."""
    now = now or utcnow()
    return {
        "lease_owner": owner,
        "lease_until": now + timedelta(seconds=ttl_s),
        "heartbeat_at": now,
    }


def _free(now: datetime) -> Any:
    # A lease that ran out is free. So is a closed session's (finishing clears ``lease_until``);
    # a RUNNING session without a lease was started by a version without leases and waits for
    # the stale sweep, as it did then.
    return sa.or_(
        DiagnosisSession.lease_until < now,
        sa.and_(
            DiagnosisSession.lease_until.is_(None),
            DiagnosisSession.status != SessionStatus.RUNNING,
        ),
    )


async def claim(session: AsyncSession, session_id: str, owner: str, ttl_s: float) -> bool:
    """Take the lease of a session that is not finished and not running elsewhere, and mark it
    RUNNING again. True when this attempt got it."""
    now = utcnow()
    result = await session.execute(
        sa.update(DiagnosisSession)
        .where(
            DiagnosisSession.session_id == session_id,
            DiagnosisSession.status != SessionStatus.SUCCESS,
            _free(now),
        )
        .values(
            status=SessionStatus.RUNNING,
            error_message=None,
            completed_at=None,
            updated_at=now,
            **lease_fields(owner, ttl_s, now),
        )
    )
    await session.commit()
    return (result.rowcount or 0) == 1


async def renew(session: AsyncSession, session_id: str, owner: str, ttl_s: float) -> bool:
    """Extend the lease while the run goes on. False when this attempt no longer holds it (it was
    swept after stalling for longer than the lease, and perhaps resumed elsewhere)."""
    now = utcnow()
    result = await session.execute(
        sa.update(DiagnosisSession)
        .where(
            DiagnosisSession.session_id == session_id,
            DiagnosisSession.lease_owner == owner,
            DiagnosisSession.status == SessionStatus.RUNNING,
        )
        .values(lease_until=now + timedelta(seconds=ttl_s), heartbeat_at=now)
    )
    await session.commit()
    return (result.rowcount or 0) == 1


async def sweep_expired(
    session: AsyncSession, unleased_stale_s: float, spare: Collection[str] = ()
) -> int:
    """Close RUNNING sessions whose lease ran out as FAILED (resumable), totals recounted from
    their rows and ``total_duration_ms`` from the start to the last sign of life (the last
    heartbeat, else the last update). RUNNING sessions without a lease (started before leases
    existed) are closed once untouched for ``unleased_stale_s``. The lease owner is kept: should
    the stalled attempt come back, it may still close its own session truthfully. ``spare``: the
    sessions whose closing is already under way in this process (``closing_here``)."""
    now = utcnow()
    expired = sa.or_(
        DiagnosisSession.lease_until < now,
        sa.and_(
            DiagnosisSession.lease_until.is_(None),
            DiagnosisSession.updated_at < now - timedelta(seconds=unleased_stale_s),
        ),
    )
    running: tuple[Any, ...] = (DiagnosisSession.status == SessionStatus.RUNNING, expired)
    if spare:
        running += (DiagnosisSession.session_id.not_in(list(spare)),)
    found = await session.execute(
        sa.select(
            DiagnosisSession.session_id,
            DiagnosisSession.created_at,
            DiagnosisSession.heartbeat_at,
            DiagnosisSession.updated_at,
        ).where(*running)
    )
    swept = 0
    # One conditional UPDATE per session (the duration differs per row, and date arithmetic in
    # SQL differs per engine); a row another worker closed meanwhile no longer matches.
    for session_id, created, beat, updated in found.all():
        alive = aware(beat or updated or created)
        result = await session.execute(
            sa.update(DiagnosisSession)
            .where(DiagnosisSession.session_id == session_id, *running)
            .values(
                status=SessionStatus.FAILED,
                error_message=INTERRUPTED,
                lease_until=None,
                updated_at=now,
                completed_at=now,
                total_duration_ms=max(0, int((alive - aware(created)).total_seconds() * 1000)),
                **recounted_totals(),
            )
        )
        swept += int(result.rowcount or 0)
    await session.commit()
    return swept


# Sessions whose run ended in this process while the database refused its record: the run keeps
# trying to close (or remove) it with the true reason, so this process's sweep must not call it
# "interrupted: the worker stopped" meanwhile — the worker is alive, the database was not. (Another
# worker's sweep may still; the run's own record then replaces it: ``finish_session`` by owner.)
_CLOSING_HERE: set[str] = set()


@contextlib.contextmanager
def closing_here(session_id: str) -> Iterator[None]:
    _CLOSING_HERE.add(session_id)
    try:
        yield
    finally:
        _CLOSING_HERE.discard(session_id)


# --- the holder's side --------------------------------------------------------------------------


class SessionBusy(Exception):
    """The session is running right now (its lease is live): a second run would write every step
    twice."""

    def __init__(self, session_id: str, retry_after_s: int) -> None:
        self.session_id, self.retry_after_s = session_id, retry_after_s
        super().__init__(
            f"session {session_id} is running right now on a worker that keeps its lease fresh; "
            f"resume it only after it ends (GET /api/sessions/{session_id} shows its status) — "
            f"if that worker died, the session is released within {retry_after_s} s"
        )


class Lease:
    """One run attempt's hold on its session, renewed in the background while the run streams.

    ``lost`` turns true when a renewal finds the lease gone (this worker stalled for longer than
    the lease and the session was swept, perhaps resumed elsewhere): the run must stop. A renewal
    that fails because the database is down is retried; the lease may then run out, which is the
    point — another worker may take over."""

    def __init__(self, db: Database, session_id: str, ttl_s: float) -> None:
        self.db, self.session_id, self.ttl_s = db, session_id, ttl_s
        self.owner = new_owner()
        self.lost = False
        self.thread_id: str | None = None  # the conversation held too (``claim_conversation``)

    def fields(self) -> dict[str, Any]:
        """The lease columns of a session this attempt creates."""
        return lease_fields(self.owner, self.ttl_s)

    async def claim(self) -> None:
        """Take an existing session's lease, or say why not: ``LookupError`` (no such session),
        ``ValueError`` (finished successfully), ``SessionBusy`` (running)."""
        async with self.db.session() as s:
            if await claim(s, self.session_id, self.owner, self.ttl_s):
                return
            row = await get_session(s, self.session_id)
        if row is None:
            raise LookupError(f"session {self.session_id} does not exist")
        if row.status == SessionStatus.SUCCESS:
            raise ValueError(f"session {self.session_id} already finished successfully")
        left = (aware(row.lease_until) - utcnow()).total_seconds() if row.lease_until else 0
        raise SessionBusy(self.session_id, max(1, math.ceil(left)))

    async def claim_conversation(self, thread_id: str) -> None:
        """Take the conversation for this attempt, or raise ``ConversationBusy``: one run at a
        time per thread (``persistence/conversations.py``)."""
        async with self.db.session() as s:
            if not await conversations.claim(s, thread_id, self.owner, self.session_id, self.ttl_s):
                raise await conversations.busy(s, thread_id)
        self.thread_id = thread_id

    async def release_conversation(self) -> None:
        """Free the conversation (best effort: a row left behind expires after one lease)."""
        if self.thread_id is None:
            return
        try:
            async with self.db.session() as s:
                await conversations.release(s, self.thread_id, self.owner)
        except Exception as exc:
            log.warning("could not free conversation %s now (%s)", self.thread_id, exc)
            return
        self.thread_id = None

    @contextlib.asynccontextmanager
    async def kept(self) -> AsyncIterator[None]:
        task = asyncio.create_task(self._renew_forever())
        try:
            yield
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def _renew_forever(self) -> None:
        while True:
            await asyncio.sleep(renew_every(self.ttl_s))
            try:
                async with self.db.session() as s:
                    held = await renew(s, self.session_id, self.owner, self.ttl_s)
                    if held and self.thread_id is not None:
                        held = await conversations.renew(s, self.thread_id, self.owner, self.ttl_s)
            except Exception as exc:
                log.warning("could not renew the lease of session %s: %s", self.session_id, exc)
                continue
            if not held:
                log.warning("session %s: this run lost its lease", self.session_id)
                self.lost = True
                return


def renew_every(ttl_s: float) -> float:
    """Renew three times per lease: two renewals may fail before another worker may take over."""
    return max(0.5, ttl_s / 3)


class LeaseSweeper:
    """Closes, every third of a lease, the RUNNING sessions whose worker died, so they become
    resumable within about one lease of the crash — on whichever worker is alive."""

    def __init__(self, db: Database, ttl_s: float, unleased_stale_s: float) -> None:
        self.db, self.ttl_s, self.unleased_stale_s = db, ttl_s, unleased_stale_s
        self._task: asyncio.Task[None] | None = None

    async def sweep(self) -> int:
        async with self.db.session() as s:
            swept = await sweep_expired(s, self.unleased_stale_s, spare=set(_CLOSING_HERE))
        if swept:
            log.warning("marked %d interrupted session(s) FAILED (resumable)", swept)
        return swept

    def start(self) -> LeaseSweeper:
        self._task = asyncio.create_task(self._forever())
        return self

    async def _forever(self) -> None:
        while True:
            await asyncio.sleep(renew_every(self.ttl_s))
            try:
                await self.sweep()
            except Exception as exc:  # the database is down: the next round tries again
                log.warning("session sweep failed: %s", exc)

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
