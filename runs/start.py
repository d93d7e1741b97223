"""A run attempt starts: its session created RUNNING and leased (or an unfinished one claimed), one
turn at a time per conversation, and the LangGraph config that carries the session's id.

A LangGraph thread is a conversation; each run on it is one session whose id travels in the run's
config metadata, so it lands in every checkpoint (``runs/resume.py`` reads it back).
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Callable, Coroutine
from typing import Any

from persistence import conversations
from persistence import repository as repo
from persistence.db import Database
from persistence.leases import Lease
from persistence.models import DiagnosisSession, SessionOrigin
from runs import db_outage
from runs.run import Run

log = logging.getLogger(__name__)


async def open_run(
    db: Database,
    lease_s: float,
    spawn: Callable[[Coroutine[Any, Any, Any]], None],
    question: str,
    *,
    flow: str = "CHAT",
    thread_id: str | None = None,
    replay_of: str | None = None,
    origin: str | None = None,
    session_id: str | None = None,
) -> Run:
    """Create the session, RUNNING and leased to this attempt. Done before anything streams, so
    a database that refuses it fails the request with a clear status, not an empty stream.
    ``session_id``: one chosen beforehand (a Studio run carries it in its config metadata)."""
    session_id, thread_id = session_id or uuid.uuid4().hex, thread_id or uuid.uuid4().hex
    lease = Lease(db, session_id, lease_s)
    async with db.session() as s:
        await repo.create_session(
            s,
            session_id=session_id,
            thread_id=thread_id,
            query=question,
            agent_flow=flow,
            replay_of=replay_of,
            origin=origin or (SessionOrigin.REPLAY if replay_of else SessionOrigin.USER),
            **lease.fields(),
        )
    # One turn at a time per conversation (raises ConversationBusy). Claimed once the session
    # exists (persistence/conversations.py says why); a refused turn's record is removed.
    try:
        await lease.claim_conversation(thread_id)
    except BaseException:
        await asyncio.shield(_discard(db, session_id, spawn))
        raise
    return Run(session_id, thread_id, flow, question, lease)


async def _discard(
    db: Database, session_id: str, spawn: Callable[[Coroutine[Any, Any, Any]], None]
) -> None:
    async def discard() -> None:
        async with db.session() as s:
            await conversations.discard_session(s, session_id)

    try:
        await discard()
    except Exception as exc:  # the database went away: removed once it is back (in the background)
        log.warning("could not remove the refused session %s now (%s)", session_id, exc)
        spawn(db_outage.when_back(session_id, discard, "removed"))


async def claim_run(db: Database, lease_s: float, row: DiagnosisSession) -> Run:
    """Take the lease of an unfinished session again (raises ``SessionBusy`` while it runs); the
    attempt continues its rows. The conversation is not claimed yet: the caller decides."""
    lease = Lease(db, row.session_id, lease_s)
    await lease.claim()
    return Run(
        row.session_id, row.thread_id or "", row.agent_flow, row.query, lease, continued=True
    )


def run_config(
    thread_id: str, session_id: str, callbacks: list[Any], checkpoint_id: str | None = None
) -> dict[str, Any]:
    """The LangGraph config of one run on ``thread_id`` (from ``checkpoint_id`` when given)."""
    configurable: dict[str, Any] = {"thread_id": thread_id}
    if checkpoint_id:
        configurable["checkpoint_id"] = checkpoint_id
    return {
        "configurable": configurable,
        "metadata": {"session_id": session_id},
        "callbacks": callbacks,
        "recursion_limit": 100,
    }
