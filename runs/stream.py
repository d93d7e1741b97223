"""A run streams: its graph runs under the session's lease, every model call and tool call is
recorded as it happens, and the UI gets events as they come (``runs/events.py`` says which).

The stream always starts with ``session`` and ends with ``done`` or ``error``; whatever ends it —
the graph, a failure, the client going away — the session is closed by the ``Finisher``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Callable
from typing import Any

from graph.context import Context
from graph.graphs import Graphs
from graph.state import run_input
from persistence import dberrors
from persistence.db import Database
from persistence.models import SessionStatus
from runs.events import translate
from runs.finish import CANCELLED, Finisher, describe_failure, outcome
from runs.recorder import RunRecorder
from runs.run import Launch, Run, RunResult, RunStopped
from runs.timing import StepTimer

log = logging.getLogger(__name__)
# (thread_id, session_id, callbacks, checkpoint_id) → the run's LangGraph config
Config = Callable[[str, str, list[Any], str | None], dict[str, Any]]


async def stream_run(
    run: Run,
    launch: Launch,
    *,
    db: Database,
    graphs: Graphs,
    config: Config,
    finisher: Finisher,
) -> AsyncIterator[dict[str, Any]]:
    """Run the graph of ``run`` (``launch.graph``, else its flow's in ``graphs``) and yield its
    events: session, node, tool_call, tool_result, token, answer, then done or error."""
    answer: str | None = None
    try:
        yield {
            "type": "session",
            "sessionId": run.session_id,
            "threadId": run.thread_id,
            "flow": run.flow,
        }
        recorder = (
            await RunRecorder.for_session(db, run.session_id)
            if run.continued
            else RunRecorder(db, run.session_id)
        )
        graph = launch.graph or graphs.for_flow(run.flow)
        stream = graph.astream(
            None if launch.resume else run_input(run.question, run.flow),  # type: ignore[arg-type]
            config(run.thread_id, run.session_id, [recorder], launch.checkpoint_id),
            context=launch.context or Context(),
            stream_mode=["tasks", "updates", "messages"],
            subgraphs=True,  # the executor's own steps (graph/executor.py) reach the live trace
            # Each checkpoint is stored before the next step starts, so every recorded row
            # belongs to a task planned from a stored checkpoint: after a crash the resumed
            # run redoes that task under the same id and its rows are not written twice.
            durability="sync",
        )
        async with run.lease.kept(), contextlib.aclosing(stream):
            timer = StepTimer()
            async for ns, mode, chunk in stream:
                _check(run, recorder)
                for event in timer.stamp(translate(mode, chunk, ns)):
                    if event["type"] == "answer":
                        answer = event["text"]
                    yield event
        _check(run, recorder)
    except (asyncio.CancelledError, GeneratorExit):
        # The client went away (SSE closed) or the server is stopping. The graph's tasks are
        # stopped by now (aclosing), so the totals counted here are final.
        await asyncio.shield(finisher.finish(run, SessionStatus.FAILED, None, CANCELLED))
        raise
    except Exception as exc:
        if isinstance(exc, RunStopped):
            error = str(exc)
        else:
            error = describe_failure(exc)
            log.exception("session %s failed", run.session_id)
        await finisher.finish(run, SessionStatus.FAILED, None, error)
        yield {"type": "error", "sessionId": run.session_id, "error": error}
        return
    status, error = outcome(recorder.faults)
    problem = await finisher.finish(run, status, answer, error)
    if error or problem:
        yield {"type": "error", "sessionId": run.session_id, "error": error or problem}
        return
    yield {
        "type": "done",
        "sessionId": run.session_id,
        "threadId": run.thread_id,
        "answer": answer,
    }


def _check(run: Run, recorder: RunRecorder) -> None:
    if run.lease.lost:
        raise RunStopped(
            "stopped: this worker stalled for longer than the session's lease "
            "(RUN_LEASE_SECONDS) and the session was released; resume it to continue"
        )
    if recorder.write_error is not None:
        reason = dberrors.describe(recorder.write_error) or "a record could not be written"
        raise RunStopped(f"stopped because the run cannot be recorded: {reason}")


async def collect(events: AsyncIterator[dict[str, Any]], thread_id: str = "") -> RunResult:
    """A streamed run's outcome, once its stream ends."""
    result = RunResult("", thread_id, "RUNNING", None)
    async for event in events:
        if event["type"] == "session":
            result.session_id, result.thread_id = event["sessionId"], event["threadId"]
        elif event["type"] == "done":
            result.status, result.answer = "SUCCESS", event["answer"]
        elif event["type"] == "error":
            result.status, result.error = "FAILED", event["error"]
    return result
