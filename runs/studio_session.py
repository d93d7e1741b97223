"""A LangGraph Studio run recorded as a session, through the same runner and recorder as HTTP runs.

Studio's server streams the graph itself, so ``Runner.events`` cannot drive it. Instead the graph
it gets is bound to a session id (config metadata, read by ``begin`` and stored in every
checkpoint) and to this callback: the root chain's start opens the session (origin ``studio``,
leased like any run), every model and tool event goes to the ``RunRecorder``, and the root chain's
end or error closes it with the answer — so the run appears in ``/sessions`` with its trace.
"""

from __future__ import annotations

import contextlib
import logging
import uuid
from typing import Any
from uuid import UUID

from langchain_core.callbacks import AsyncCallbackHandler
from langchain_core.messages import convert_to_messages
from langgraph.graph.state import CompiledStateGraph

from graph.state import asked_in_messages
from persistence.models import SessionOrigin
from runs.recorder import RunRecorder
from runs.run import Run
from runs.runner import Runner

log = logging.getLogger(__name__)


def question_of(inputs: Any, flow: str, default: str) -> str:
    """What ``begin`` will take as the question: the last human message, else the form's field."""
    if not isinstance(inputs, dict):
        return default
    try:
        asked = asked_in_messages(convert_to_messages(inputs.get("messages") or []))
    except (ValueError, TypeError, NotImplementedError):
        asked = ""
    given = inputs.get("note" if flow == "AI_OPS" else "question") or ""
    return asked or str(given).strip() or default


class StudioSession(AsyncCallbackHandler):
    """One Studio run's session: opened at the root chain's start, closed at its end."""

    raise_error = False  # a recording problem must not stop the run; it is logged

    def __init__(self, runner: Runner, session_id: str, flow: str, default_question: str) -> None:
        self.runner, self.session_id, self.flow = runner, session_id, flow
        self.default_question = default_question
        self.root: UUID | None = None
        self.run: Run | None = None
        self.recorder: RunRecorder | None = None
        self._lease = contextlib.AsyncExitStack()

    async def on_chain_start(
        self,
        serialized: dict[str, Any] | None,
        inputs: dict[str, Any],
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        metadata: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        if parent_run_id is not None or self.root is not None:
            return
        self.root = run_id
        thread = (metadata or {}).get("thread_id")
        question = question_of(inputs, self.flow, self.default_question)
        self.run = await self.runner.open(
            question,
            flow=self.flow,
            thread_id=str(thread) if thread else None,
            origin=SessionOrigin.STUDIO,
            session_id=self.session_id,
        )
        self.recorder = RunRecorder(self.runner.db, self.session_id)
        await self._lease.enter_async_context(self.run.lease.kept())

    async def _close(self, answer: str | None, failure: BaseException | None) -> None:
        if self.run is None or self.recorder is None:
            return
        run, self.run = self.run, None
        try:
            problem = await self.runner.finisher.close(run, self.recorder, answer, failure)
            if problem:
                log.warning("studio session %s: %s", run.session_id, problem)
        finally:
            await self._lease.aclose()

    async def on_chain_end(
        self, outputs: Any, *, run_id: UUID, parent_run_id: UUID | None = None, **kwargs: Any
    ) -> None:
        if run_id == self.root:
            answer = outputs.get("answer") if isinstance(outputs, dict) else None
            await self._close(answer, None)

    async def on_chain_error(
        self, error: BaseException, *, run_id: UUID, parent_run_id: UUID | None = None, **kw: Any
    ) -> None:
        if run_id == self.root:
            await self._close(None, error)

    # Model and tool events: the recorder writes the steps and tool calls, as for an HTTP run.
    async def on_chat_model_start(self, *args: Any, **kwargs: Any) -> None:
        if self.recorder is not None:
            await self.recorder.on_chat_model_start(*args, **kwargs)

    async def on_llm_end(self, *args: Any, **kwargs: Any) -> None:
        if self.recorder is not None:
            await self.recorder.on_llm_end(*args, **kwargs)

    async def on_llm_error(self, *args: Any, **kwargs: Any) -> None:
        if self.recorder is not None:
            await self.recorder.on_llm_error(*args, **kwargs)

    async def on_tool_start(self, *args: Any, **kwargs: Any) -> None:
        if self.recorder is not None:
            await self.recorder.on_tool_start(*args, **kwargs)

    async def on_tool_end(self, *args: Any, **kwargs: Any) -> None:
        if self.recorder is not None:
            await self.recorder.on_tool_end(*args, **kwargs)

    async def on_tool_error(self, *args: Any, **kwargs: Any) -> None:
        if self.recorder is not None:
            await self.recorder.on_tool_error(*args, **kwargs)


def recorded(
    graph: CompiledStateGraph, runner: Runner, flow: str, default_question: str = ""
) -> CompiledStateGraph:
    """``graph`` bound to a fresh session: the run Studio starts on it is recorded."""
    session_id = uuid.uuid4().hex
    handler = StudioSession(runner, session_id, flow, default_question)
    return graph.with_config(metadata={"session_id": session_id}, callbacks=[handler])  # type: ignore[return-value]
