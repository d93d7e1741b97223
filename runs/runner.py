"""Runs a graph as one diagnosis session: RUNNING → SUCCESS | FAILED, recorded step by step.

A LangGraph thread is a conversation; each run on it is one session whose id travels in the run's
config metadata (so it lands in every checkpoint). A run holds its session's lease while it streams,
so a session runs on one worker at a time. ``events`` streams what the UI shows live and always
ends with ``done`` or ``error``; every ending — success, failure, cancel — closes the session with
its totals recounted from its rows, and the evidence score follows in the background.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import uuid
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from typing import Any

from langgraph.graph.state import CompiledStateGraph

from graph.context import Context
from graph.graphs import Graphs
from graph.state import run_input
from persistence import conversations, dberrors, run_rows
from persistence import repository as repo
from persistence.db import Database
from persistence.evaluation import evidence_score
from persistence.leases import INTERRUPTED, Lease
from persistence.models import SessionOrigin, SessionStatus
from runs import db_outage
from runs.events import translate
from runs.recorder import RunRecorder
from runs.resume import ResumePlan, plan_resume
from runs.timing import StepTimer
from telemetry import metrics

log = logging.getLogger(__name__)
DEFAULT_LEASE_S = 30.0
CANCELLED = (
    "cancelled: the client disconnected or the server stopped before the run finished; "
    "resume it to continue"
)


@dataclass
class RunResult:
    session_id: str
    thread_id: str
    status: str
    answer: str | None
    error: str | None = None


@dataclass
class Run:
    """One attempt at running a session: which session, on which thread, holding which lease."""

    session_id: str
    thread_id: str
    flow: str
    question: str
    lease: Lease
    continued: bool = False  # the session has rows from an earlier attempt


class RunStopped(Exception):
    """The run must stop for a reason outside the graph (its lease was lost, or it cannot be
    recorded); the message says which, in words."""


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0][:500] if text else ""


def describe_failure(exc: BaseException) -> str:
    """A message an operator can act on, in words: the database, the model endpoint, or a fault."""
    if db := dberrors.describe(exc):
        return db
    detail = _first_line(exc)
    if any(
        c.__module__.split(".")[0] in {"openai", "httpx", "langchain_openai"}
        for c in type(exc).__mro__
    ):
        return "the model endpoint failed after its retries (LLM_MAX_RETRIES / LLM_TIMEOUT_S): " + (
            detail or "no answer"
        )
    return (
        "the run failed unexpectedly" + (f": {detail}" if detail else "") + "; see the server log"
    )


def fault_error(faults: Sequence[str]) -> str | None:
    """A run whose tool broke is not a success: what that tool would have found is missing."""
    if not faults:
        return None
    listed = "; ".join(faults[:3]) + (f" (and {len(faults) - 3} more)" if len(faults) > 3 else "")
    return f"a tool failed unexpectedly, so the answer may miss what it would have found — {listed}"


class Runner:
    def __init__(self, db: Database, graphs: Graphs, lease_s: float = DEFAULT_LEASE_S) -> None:
        self.db, self.graphs, self.lease_s = db, graphs, lease_s
        self._background: set[asyncio.Task[Any]] = set()

    async def open(
        self,
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
        lease = Lease(self.db, session_id, self.lease_s)
        async with self.db.session() as db:
            await repo.create_session(
                db,
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
            await asyncio.shield(self._discard(session_id))
            raise
        return Run(session_id, thread_id, flow, question, lease)

    async def _discard(self, session_id: str) -> None:
        async def discard() -> None:
            async with self.db.session() as db:
                await conversations.discard_session(db, session_id)

        try:
            await discard()
        except Exception as exc:  # the database went away: removed once it is back
            log.warning("could not remove the refused session %s now (%s)", session_id, exc)
            self._spawn(db_outage.when_back(session_id, discard, "removed"))

    @staticmethod
    def config(
        thread_id: str, session_id: str, callbacks: list[Any], checkpoint_id: str | None = None
    ) -> dict[str, Any]:
        configurable: dict[str, Any] = {"thread_id": thread_id}
        if checkpoint_id:
            configurable["checkpoint_id"] = checkpoint_id
        return {
            "configurable": configurable,
            "metadata": {"session_id": session_id},
            "callbacks": callbacks,
            "recursion_limit": 100,
        }

    async def events(
        self,
        question: str,
        *,
        flow: str = "CHAT",
        thread_id: str | None = None,
        context: Context | None = None,
        graph: CompiledStateGraph | None = None,
        resume: bool = False,
        checkpoint_id: str | None = None,
        replay_of: str | None = None,
        origin: str | None = None,
        run: Run | None = None,
    ) -> AsyncIterator[dict[str, Any]]:
        """Run and yield events: session, node, tool_call, tool_result, token, answer, done|error.

        A new run starts from ``question``; ``resume=True`` instead continues the thread from its
        latest checkpoint (or ``checkpoint_id``). ``run`` is a session already opened or claimed."""
        run = run or await self.open(
            question, flow=flow, thread_id=thread_id, replay_of=replay_of, origin=origin
        )
        answer: str | None = None
        try:
            yield {
                "type": "session",
                "sessionId": run.session_id,
                "threadId": run.thread_id,
                "flow": run.flow,
            }
            recorder = (
                await RunRecorder.for_session(self.db, run.session_id)
                if run.continued
                else RunRecorder(self.db, run.session_id)
            )
            graph = graph or self.graphs.for_flow(run.flow)
            stream = graph.astream(
                None if resume else run_input(run.question, run.flow),  # type: ignore[arg-type]
                self.config(run.thread_id, run.session_id, [recorder], checkpoint_id),
                context=context or Context(),
                stream_mode=["tasks", "updates", "messages"],
                # Each checkpoint is stored before the next step starts, so every recorded row
                # belongs to a task planned from a stored checkpoint: after a crash the resumed
                # run redoes that task under the same id and its rows are not written twice.
                durability="sync",
            )
            async with run.lease.kept(), contextlib.aclosing(stream):
                timer = StepTimer()
                async for mode, chunk in stream:
                    self._check(run, recorder)
                    for event in timer.stamp(translate(mode, chunk)):
                        if event["type"] == "answer":
                            answer = event["text"]
                        yield event
            self._check(run, recorder)
        except (asyncio.CancelledError, GeneratorExit):
            # The client went away (SSE closed) or the server is stopping. The graph's tasks are
            # stopped by now (aclosing), so the totals counted here are final.
            await asyncio.shield(self._finish(run, SessionStatus.FAILED, None, CANCELLED))
            raise
        except Exception as exc:
            if isinstance(exc, RunStopped):
                error = str(exc)
            else:
                error = describe_failure(exc)
                log.exception("session %s failed", run.session_id)
            await self._finish(run, SessionStatus.FAILED, None, error)
            yield {"type": "error", "sessionId": run.session_id, "error": error}
            return
        status, error = self._outcome(recorder.faults)
        problem = await self._finish(run, status, answer, error)
        if error or problem:
            yield {"type": "error", "sessionId": run.session_id, "error": error or problem}
            return
        yield {
            "type": "done",
            "sessionId": run.session_id,
            "threadId": run.thread_id,
            "answer": answer,
        }

    @staticmethod
    def _check(run: Run, recorder: RunRecorder) -> None:
        if run.lease.lost:
            raise RunStopped(
                "stopped: this worker stalled for longer than the session's lease "
                "(RUN_LEASE_SECONDS) and the session was released; resume it to continue"
            )
        if recorder.write_error is not None:
            reason = dberrors.describe(recorder.write_error) or "a record could not be written"
            raise RunStopped(f"stopped because the run cannot be recorded: {reason}")

    @staticmethod
    def _outcome(faults: Sequence[str]) -> tuple[SessionStatus, str | None]:
        error = fault_error(faults)
        return (SessionStatus.FAILED if error else SessionStatus.SUCCESS), error

    async def _finish(
        self, run: Run, status: SessionStatus, answer: str | None, error: str | None
    ) -> str | None:
        """Close the record: totals recounted from the rows, lease released. Returns None when it is
        closed, else why not; when the database refuses right now, it keeps trying in the
        background, so the session ends SUCCESS/FAILED when it can instead of staying RUNNING."""
        metrics.record_session(run.flow, status)  # the run's outcome, whether or not it is stored
        if status == SessionStatus.FAILED and answer is None:
            answer = f"本次运行未能完成：{error}"
        try:
            closed = await self._write_finish(run, status, answer, error)
        except Exception as exc:
            await run.lease.release_conversation()  # the turn is over even if its record waits
            log.warning("could not close session %s now (%s); retrying", run.session_id, exc)
            self._spawn(self._finish_later(run, status, answer, error))
            return (
                f"the run ended but its record could not be stored: {describe_failure(exc)}; it is "
                "closed when the database accepts writes again"
            )
        await run.lease.release_conversation()
        if not closed:
            log.warning("session %s was taken over by another run; not closing it", run.session_id)
            return "another run of this session took over its record while this one stalled"
        self._spawn(self.score(run.session_id))
        return None

    async def close(
        self,
        run: Run,
        recorder: RunRecorder,
        answer: str | None,
        failure: BaseException | None = None,
    ) -> str | None:
        """Close a session whose graph someone else streamed (LangGraph Studio's server), as
        ``events`` closes its own: the recorder's faults or ``failure`` make it FAILED."""
        if failure is not None:
            return await self._finish(run, SessionStatus.FAILED, None, describe_failure(failure))
        status, error = self._outcome(recorder.faults)
        return await self._finish(run, status, answer, error)

    async def _write_finish(
        self, run: Run, status: SessionStatus, answer: str | None, error: str | None
    ) -> bool:
        async with self.db.session() as db:
            return await run_rows.finish_session(
                db,
                run.session_id,
                status=status,
                answer=answer,
                error_message=error[:4000] if error else None,
                owner=run.lease.owner,
            )

    async def _finish_later(
        self, run: Run, status: SessionStatus, answer: str | None, error: str | None
    ) -> None:
        write = functools.partial(self._write_finish, run, status, answer, error)
        if await db_outage.when_back(run.session_id, write, "closed"):
            await self.score(run.session_id)

    def _spawn(self, coro: Any) -> None:
        task = asyncio.create_task(coro)
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    async def score(self, session_id: str) -> dict[str, Any] | None:
        """Evidence score into ``self_evaluation``; on failure it stays NULL and the reason is logged."""
        try:
            async with self.db.session() as db:
                row = await repo.get_session(db, session_id)
                calls = await repo.list_invocations(db, session_id)
                result = evidence_score(row.status if row else "FAILED", calls)
                await repo.update_session(db, session_id, self_evaluation=result)
            return result
        except Exception:
            log.exception(
                "evidence scoring failed for session %s; self_evaluation left NULL", session_id
            )
            return None

    async def drain(self) -> None:
        """Wait for background scoring and closing (tests and shutdown)."""
        if self._background:
            await asyncio.gather(*list(self._background), return_exceptions=True)

    async def run(self, question: str, **kwargs: Any) -> RunResult:
        result = RunResult("", kwargs.get("thread_id") or "", "RUNNING", None)
        async for event in self.events(question, **kwargs):
            if event["type"] == "session":
                result.session_id, result.thread_id = event["sessionId"], event["threadId"]
            elif event["type"] == "done":
                result.status, result.answer = "SUCCESS", event["answer"]
            elif event["type"] == "error":
                result.status, result.error = "FAILED", event["error"]
        return result

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
        lease = Lease(self.db, session_id, self.lease_s)
        await lease.claim()
        run = Run(session_id, row.thread_id, row.agent_flow, row.query, lease, continued=True)
        before = (row.answer, row.error_message or INTERRUPTED)
        try:
            await lease.claim_conversation(row.thread_id)  # a newer turn may be running on it
            plan, head_answer = await self._plan(run, row.id or 0)
        except BaseException:
            await asyncio.shield(self._finish(run, SessionStatus.FAILED, *before))
            raise
        if plan.action == "refuse":
            await self._finish(run, SessionStatus.FAILED, *before)
            raise ValueError(plan.reason)
        if plan.action == "close":
            return await self._close_finished(run, head_answer)
        if plan.action == "restart":
            async with self.db.session() as db:
                if await run_rows.delete_run_rows(db, session_id):
                    log.warning(
                        "session %s restarts from its question: %s", session_id, plan.reason
                    )
        return await self.run(row.query, context=context, resume=plan.action == "continue", run=run)

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
        status, error = self._outcome(recorder.faults)
        problem = await self._finish(run, status, answer, error)
        return RunResult(
            run.session_id,
            run.thread_id,
            "FAILED" if error or problem else "SUCCESS",
            answer,
            error or problem,
        )
