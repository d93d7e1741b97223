"""Runs a graph as one diagnosis session: RUNNING → SUCCESS | FAILED, recorded step by step.

A LangGraph thread is a conversation; each run on it is one session whose id travels in the run's
config metadata (so it lands in every checkpoint). ``events`` streams what the UI shows live; the
evidence score is computed after the answer is out, in the background.
"""

from __future__ import annotations

import asyncio
import json
import logging
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

from langchain_core.messages import AIMessageChunk, ToolMessage
from langgraph.graph.state import CompiledStateGraph

from graph.context import Context
from graph.graphs import Graphs
from graph.recorder import RunRecorder
from graph.state import run_input
from persistence import repository as repo
from persistence.db import Database
from persistence.evaluation import evidence_score
from persistence.models import SessionStatus

log = logging.getLogger(__name__)
STREAMED_NODES = {"assistant", "answer"}  # nodes whose text is the user-facing answer
QUIET_NODES = {"begin"}  # the per-run reset: bookkeeping the live trace does not show


@dataclass
class RunResult:
    session_id: str
    thread_id: str
    status: str
    answer: str | None
    error: str | None = None


def _tool_event(msg: ToolMessage) -> dict[str, Any]:
    event: dict[str, Any] = {
        "type": "tool_result",
        "tool": msg.name,
        "call_id": msg.tool_call_id,
        "status": msg.status,
    }
    if msg.name == "lookup_knowledge":
        try:
            payload = json.loads(msg.content if isinstance(msg.content, str) else "{}")
        except ValueError:
            payload = {}
        event |= {
            "relevanceLevel": payload.get("relevanceLevel"),
            "retrievedDomainsThisSession": payload.get("retrievedDomainsThisSession"),
            "source": (payload.get("primary") or {}).get("source"),
            "message": payload.get("message"),
        }
    return event


def describe_failure(exc: BaseException) -> str:
    """A message an operator can act on, naming the model endpoint when that is what failed."""
    text = f"{type(exc).__name__}: {exc}"
    if any(
        c.__module__.split(".")[0] in {"openai", "httpx", "langchain_openai"}
        for c in type(exc).__mro__
    ):
        return (
            f"the model endpoint failed after its retries (LLM_MAX_RETRIES / LLM_TIMEOUT_S): {text}"
        )
    return text


class Runner:
    def __init__(self, db: Database, graphs: Graphs) -> None:
        self.db, self.graphs = db, graphs
        self._background: set[asyncio.Task[Any]] = set()

    async def open_session(
        self, question: str, thread_id: str, flow: str, replay_of: str | None = None
    ) -> str:
        session_id = uuid.uuid4().hex
        async with self.db.session() as db:
            await repo.create_session(
                db,
                session_id=session_id,
                thread_id=thread_id,
                query=question,
                agent_flow=flow,
                replay_of=replay_of,
            )
        return session_id

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
        session_id: str | None = None,
        checkpoint_id: str | None = None,
        replay_of: str | None = None,
    ) -> AsyncIterator[dict[str, Any]]:
        """Run and yield events: session, node, tool_call, tool_result, token, answer, done|error.

        A new run starts from ``question``; ``resume=True`` instead continues the thread from its
        latest checkpoint (or ``checkpoint_id``). ``session_id`` continues that session's record."""
        thread_id = thread_id or uuid.uuid4().hex
        if session_id is None:
            session_id = await self.open_session(question, thread_id, flow, replay_of)
            recorder = RunRecorder(self.db, session_id)
        else:  # a resumed run continues the numbering of the rows it already has
            async with self.db.session() as db:
                await repo.update_session(
                    db, session_id, status=SessionStatus.RUNNING, error_message=None
                )
            recorder = await RunRecorder.for_session(self.db, session_id)
        yield {"type": "session", "sessionId": session_id, "threadId": thread_id, "flow": flow}
        graph = graph or self.graphs.for_flow(flow)
        inp = None if resume else run_input(question, flow)
        config = self.config(thread_id, session_id, [recorder], checkpoint_id)
        answer: str | None = None
        try:
            async for mode, chunk in graph.astream(
                inp,
                config,
                context=context or Context(),
                stream_mode=["tasks", "updates", "messages"],
            ):
                for event in self._translate(mode, chunk):
                    if event["type"] == "answer":
                        answer = event["text"]
                    yield event
        except asyncio.CancelledError:
            # The client went away (SSE closed) or the server is stopping: close the record.
            await asyncio.shield(
                self._finish(
                    session_id, SessionStatus.FAILED, None, "cancelled before the run finished"
                )
            )
            raise
        except Exception as exc:
            error = describe_failure(exc)
            log.exception("session %s failed", session_id)
            await self._finish(session_id, SessionStatus.FAILED, None, error[:4000])
            yield {"type": "error", "sessionId": session_id, "error": error}
            return
        await self._finish(session_id, SessionStatus.SUCCESS, answer, None)
        yield {"type": "done", "sessionId": session_id, "threadId": thread_id, "answer": answer}

    def _translate(self, mode: str, chunk: Any) -> list[dict[str, Any]]:
        if (
            mode == "tasks"
            and isinstance(chunk, dict)
            and "input" in chunk
            and not str(chunk.get("name", "")).startswith("__")
            and chunk["name"] not in QUIET_NODES
        ):
            return [{"type": "node", "node": chunk["name"]}]
        if mode == "messages":
            msg, meta = chunk
            node = meta.get("langgraph_node")
            if (
                isinstance(msg, AIMessageChunk)
                and node in STREAMED_NODES
                and isinstance(msg.content, str)
                and msg.content
            ):
                return [{"type": "token", "node": node, "text": msg.content}]
            return []
        if mode != "updates" or not isinstance(chunk, dict):
            return []
        events: list[dict[str, Any]] = []
        for node, raw in chunk.items():
            if node in QUIET_NODES:
                continue
            # A ToolNode whose tools return Commands reports a list of updates.
            for update in raw if isinstance(raw, list) else [raw]:
                if isinstance(update, dict):
                    events += self._from_update(node, update)
        return events

    @staticmethod
    def _from_update(node: str, update: dict[str, Any]) -> list[dict[str, Any]]:
        events: list[dict[str, Any]] = []
        for m in update.get("scratch") or []:
            for tc in getattr(m, "tool_calls", None) or []:
                events.append(
                    {
                        "type": "tool_call",
                        "node": node,
                        "tool": tc["name"],
                        "args": tc["args"],
                        "call_id": tc["id"],
                    }
                )
            if isinstance(m, ToolMessage):
                events.append(_tool_event(m))
        if update.get("answer"):
            events.append({"type": "answer", "node": node, "text": update["answer"]})
        return events

    async def _finish(
        self, session_id: str, status: SessionStatus, answer: str | None, error: str | None
    ) -> None:
        """Close the record. If the database is down right now, keep trying in the background so
        the session ends SUCCESS/FAILED when it returns instead of staying RUNNING forever."""
        if status == SessionStatus.FAILED and answer is None:
            answer = f"本次运行未能完成：{error}"
        try:
            await self._write_finish(session_id, status, answer, error)
        except Exception as exc:
            log.warning(
                "could not close session %s now (%s); retrying in the background", session_id, exc
            )
            self._spawn(self._finish_later(session_id, status, answer, error))
            return
        self._spawn(self.score(session_id))

    async def _write_finish(
        self, session_id: str, status: SessionStatus, answer: str | None, error: str | None
    ) -> None:
        async with self.db.session() as db:
            await repo.finish_session(
                db, session_id, status=status, answer=answer, error_message=error
            )

    async def _finish_later(
        self,
        session_id: str,
        status: SessionStatus,
        answer: str | None,
        error: str | None,
        attempts: int = 12,
    ) -> None:
        delay = 1.0
        for _ in range(attempts):
            await asyncio.sleep(delay)
            try:
                await self._write_finish(session_id, status, answer, error)
            except Exception:
                delay = min(delay * 2, 30.0)
                continue
            await self.score(session_id)
            return
        log.error(
            "session %s could not be closed; the start-up sweep will mark it FAILED", session_id
        )

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
        """Wait for background scoring (tests and shutdown)."""
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
        """Continue an interrupted or failed run from its last checkpoint, same session, no duplicates."""
        async with self.db.session() as db:
            row = await repo.get_session(db, session_id)
        if row is None or not row.thread_id:
            raise LookupError(f"session {session_id} does not exist")
        if row.status == SessionStatus.SUCCESS:
            raise ValueError(f"session {session_id} already finished successfully")
        head = await self.graphs.for_flow(row.agent_flow).aget_state(
            {"configurable": {"thread_id": row.thread_id}}
        )
        if (head.metadata or {}).get("session_id") != session_id:
            raise ValueError(
                f"the conversation moved on after session {session_id}; it cannot be resumed"
            )
        if not head.next:
            raise ValueError(f"session {session_id} has nothing left to run")
        return await self.run(
            row.query,
            flow=row.agent_flow,
            thread_id=row.thread_id,
            context=context,
            resume=True,
            session_id=session_id,
        )
