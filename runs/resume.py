"""How an unfinished session resumes: judged from its thread's latest checkpoint (``plan_resume``,
pure), then done by ``Resumer`` on the same session, without writing any row twice.

Checkpoints carry the session id of the run that wrote them (config metadata). The thread's latest
checkpoint therefore says whether this session's run is where the thread stopped (continue it, or
just close it when its graph had finished), whether the run never got a checkpoint stored (start it
again from its question), or whether a later question moved the conversation on (refuse: resuming
would rewind it).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Literal

from graph.context import Context
from graph.graphs import Graphs
from persistence import repository as repo
from persistence import run_rows
from persistence.db import Database
from persistence.leases import INTERRUPTED
from persistence.models import SessionStatus
from runs.finish import Finisher, outcome
from runs.recorder import RunRecorder
from runs.run import Launch, Run, RunResult
from runs.start import claim_run

log = logging.getLogger(__name__)

Action = Literal["continue", "close", "restart", "refuse"]


@dataclass(frozen=True)
class ResumePlan:
    action: Action
    reason: str = ""


def plan_resume(
    session_id: str,
    session_order: int,
    head_session_id: str | None,
    head_has_tasks: bool,
    head_session_order: int | None,
) -> ResumePlan:
    """``*_order`` are the sessions' row ids (creation order); ``head_session_order`` is None when
    the head's session is not recorded here."""
    if head_session_id == session_id:
        if head_has_tasks:
            return ResumePlan("continue")
        return ResumePlan("close", "its graph had finished; only its record was left open")
    if head_session_id is None or (
        head_session_order is not None and head_session_order < session_order
    ):
        return ResumePlan(
            "restart", "no checkpoint of this run was stored; it starts again from its question"
        )
    return ResumePlan(
        "refuse",
        f"the conversation moved on: session {head_session_id} asked a later question on the same "
        f"thread, and resuming session {session_id} would rewind it; ask again instead",
    )


class Resumer:
    """Resumes the sessions of ``graphs`` recorded in ``db``: claims one again (for ``lease_s``),
    plans from its thread's head, and streams it on with ``stream``."""

    def __init__(
        self,
        db: Database,
        graphs: Graphs,
        lease_s: float,
        finisher: Finisher,
        stream: Callable[[Run, Launch], Awaitable[RunResult]],
    ) -> None:
        self.db, self.graphs, self.lease_s = db, graphs, lease_s
        self.finisher, self.stream = finisher, stream

    async def resume(self, session_id: str, context: Context | None = None) -> RunResult:
        """Continue an interrupted or failed run, same session, no row written twice.

        Raises ``LookupError`` (no such session), ``persistence.leases.SessionBusy`` (it is running
        right now) or ``ValueError`` (finished, or the conversation moved on)."""
        async with self.db.session() as db:
            row = await repo.get_session(db, session_id)
        if row is None or not row.thread_id:
            raise LookupError(f"session {session_id} does not exist")
        if row.status == SessionStatus.SUCCESS:
            raise ValueError(f"session {session_id} already finished successfully")
        run = await claim_run(self.db, self.lease_s, row)
        before = (row.answer, row.error_message or INTERRUPTED)
        try:
            await run.lease.claim_conversation(row.thread_id)  # a newer turn may be running on it
            plan, head_answer = await self._plan(run, row.id or 0)
        except BaseException:
            await asyncio.shield(self.finisher.finish(run, SessionStatus.FAILED, *before))
            raise
        if plan.action == "refuse":
            await self.finisher.finish(run, SessionStatus.FAILED, *before)
            raise ValueError(plan.reason)
        if plan.action == "close":
            return await self._close_finished(run, head_answer)
        if plan.action == "restart":
            async with self.db.session() as db:
                if await run_rows.delete_run_rows(db, session_id):
                    log.warning(
                        "session %s restarts from its question: %s", session_id, plan.reason
                    )
        return await self.stream(run, Launch(context=context, resume=plan.action == "continue"))

    async def _plan(self, run: Run, order: int) -> tuple[ResumePlan, str | None]:
        head = await self.graphs.for_flow(run.flow).aget_state(
            {"configurable": {"thread_id": run.thread_id}}
        )
        head_session = (head.metadata or {}).get("session_id")
        head_order = None
        if head_session and head_session != run.session_id:
            async with self.db.session() as db:
                other = await repo.get_session(db, head_session)
            head_order = other.id if other else None
        # ``next`` leaves out tasks whose writes were stored before the crash, yet the run still has
        # to apply them and go on: only a checkpoint without any task is a finished graph.
        plan = plan_resume(run.session_id, order, head_session, bool(head.tasks), head_order)
        return plan, (head.values or {}).get("answer")

    async def _close_finished(self, run: Run, answer: str | None) -> RunResult:
        """The graph had finished before the crash; only the record was left open."""
        recorder = await RunRecorder.for_session(self.db, run.session_id)
        status, error = outcome(recorder.faults)
        problem = await self.finisher.finish(run, status, answer, error)
        return RunResult(
            run.session_id,
            run.thread_id,
            "FAILED" if error or problem else "SUCCESS",
            answer,
            error or problem,
        )
