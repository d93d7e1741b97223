"""A run ends: its session closed SUCCESS or FAILED with the totals recounted from its rows and its
lease given back, then its evidence score computed in the background.

Every ending — success, failure, cancel, a Studio run's — closes through ``Finisher.finish``. A
close the database refuses right now is retried in the background, so the session ends when it can
instead of staying RUNNING; ``drain`` waits for that work (tests and shutdown).
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Sequence
from typing import Any

from persistence import dberrors, run_rows
from persistence import repository as repo
from persistence.db import Database
from persistence.evaluation import evidence_score
from persistence.models import SessionStatus
from runs import db_outage
from runs.recorder import RunRecorder
from runs.run import Run
from telemetry import metrics

log = logging.getLogger(__name__)
CANCELLED = (
    "cancelled: the client disconnected or the server stopped before the run finished; "
    "resume it to continue"
)


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


def outcome(faults: Sequence[str]) -> tuple[SessionStatus, str | None]:
    """How a run whose graph ended ends: FAILED when one of its tools broke, else SUCCESS."""
    error = fault_error(faults)
    return (SessionStatus.FAILED if error else SessionStatus.SUCCESS), error


class Finisher:
    """Closes and scores the sessions of runs recorded into ``db``; tracks what it left running."""

    def __init__(self, db: Database) -> None:
        self.db = db
        self._background: set[asyncio.Task[Any]] = set()

    async def finish(
        self, run: Run, status: SessionStatus, answer: str | None, error: str | None
    ) -> str | None:
        """Close the record: totals recounted from the rows, lease released. Returns None when it is
        closed, else why not; when the database refuses right now, it keeps trying in the
        background, so the session ends SUCCESS/FAILED when it can instead of staying RUNNING."""
        metrics.record_session(run.flow, status)  # the run's outcome, whether or not it is stored
        if status == SessionStatus.FAILED and answer is None:
            answer = f"本次运行未能完成：{error}"
        try:
            closed = await self._write(run, status, answer, error)
        except Exception as exc:
            await run.lease.release_conversation()  # the turn is over even if its record waits
            log.warning("could not close session %s now (%s); retrying", run.session_id, exc)
            self.spawn(self._finish_later(run, status, answer, error))
            return (
                f"the run ended but its record could not be stored: {describe_failure(exc)}; it is "
                "closed when the database accepts writes again"
            )
        await run.lease.release_conversation()
        if not closed:
            log.warning("session %s was taken over by another run; not closing it", run.session_id)
            return "another run of this session took over its record while this one stalled"
        self.spawn(self.score(run.session_id))
        return None

    async def close(
        self,
        run: Run,
        recorder: RunRecorder,
        answer: str | None,
        failure: BaseException | None = None,
    ) -> str | None:
        """Close a run whose graph ended: ``failure`` or the recorder's faults make it FAILED."""
        if failure is not None:
            return await self.finish(run, SessionStatus.FAILED, None, describe_failure(failure))
        status, error = outcome(recorder.faults)
        return await self.finish(run, status, answer, error)

    async def _write(
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
        write = functools.partial(self._write, run, status, answer, error)
        if await db_outage.when_back(run.session_id, write, "closed"):
            await self.score(run.session_id)

    def spawn(self, coro: Any) -> None:
        """Background work of a run (a close or removal waiting for the database, scoring), drained
        at shutdown."""
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
