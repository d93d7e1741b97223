"""``RunRecorder``: a LangChain callback handler that writes each model call (``agent_step``) and each
tool call (``tool_invocation``) of one run as it happens.

Keys make writes idempotent. A model call is keyed by its LangGraph task (``checkpoint_ns`` holds
the node and the task id, derived from the checkpoint the task was planned from) plus its ordinal
inside the task; a tool call by its ``tool_call_id``. The runner persists each checkpoint before the
next step starts (``durability="sync"``), so a crash can only cut short tasks planned from a stored
checkpoint: resuming re-executes them with the same ids and their rows are rewritten in place, never
written twice. Raw retrieval scores come from the tool's artifact, never from what the model saw.

The recorder never fails the run itself (LangChain would swallow it); it remembers the first write
that failed (``write_error``) and the tool calls that broke (``faults``), and the runner decides.
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
from typing import Any
from uuid import UUID

from langchain_core.callbacks import AsyncCallbackHandler
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage, message_to_dict
from langchain_core.outputs import LLMResult
from langgraph.types import Command

from persistence import repository as repo
from persistence import run_rows
from persistence.db import Database
from persistence.models import AgentStep, ToolInvocation
from telemetry import metrics
from tools.errors import is_expected, is_unexpected_text, tool_error_text

log = logging.getLogger(__name__)

INPUT_CHARS, OUTPUT_CHARS, THOUGHT_CHARS, PREVIEW_CHARS = 500, 500, 2000, 500
DETAIL_KEYS = (
    "l0_titles",
    "l1_scores",
    "l1_top_score",
    "l1_top_similarity",
    "relevance_level",
    "completeness_hint",
    "retrieved_domains",
    "dedup_reason",
    "timings_ms",
    "route_weights",
    "l1_error",
    "layer",
    "judge",
    "confidence",
    "readability",
    "documents",
)


def _text(content: Any) -> str:
    return (
        content
        if isinstance(content, str)
        else json.dumps(content, ensure_ascii=False, default=str)
    )


def input_digest(messages: list[BaseMessage]) -> str:
    payload = [(m.type, _text(m.content), getattr(m, "tool_calls", None) or None) for m in messages]
    return hashlib.sha256(json.dumps(payload, ensure_ascii=False, default=str).encode()).hexdigest()


def summarize_input(messages: list[BaseMessage]) -> str:
    """The last few messages, newest last, within 500 characters."""
    parts = [f"[{m.type}] {_text(m.content)[:200]}" for m in messages[-3:]]
    return " | ".join(parts)[-INPUT_CHARS:]


def summarize_output(msg: AIMessage) -> str:
    calls = "; ".join(
        f"{tc['name']}({json.dumps(tc['args'], ensure_ascii=False)})" for tc in msg.tool_calls
    )
    text = _text(msg.content)
    return (f"{text} → {calls}" if text and calls else text or calls)[:OUTPUT_CHARS]


def thought_of(msg: AIMessage) -> str | None:
    reasoning = msg.additional_kwargs.get("reasoning_content")  # DeepSeek-R1 and similar
    if reasoning:
        return str(reasoning)[:THOUGHT_CHARS]
    if msg.tool_calls and _text(msg.content).strip():
        return _text(msg.content)[:THOUGHT_CHARS]
    return None


def tool_message_of(output: Any) -> ToolMessage | None:
    if isinstance(output, ToolMessage):
        return output
    if isinstance(output, Command) and isinstance(output.update, dict):
        for values in output.update.values():
            for m in values if isinstance(values, list) else []:
                if isinstance(m, ToolMessage):
                    return m
    return None


class RunRecorder(AsyncCallbackHandler):
    """One per run; ``session_id`` is the run's diagnosis session."""

    raise_error = False  # LangChain would log and swallow it; the runner reads ``write_error``

    def __init__(self, db: Database, session_id: str, first_index: int = 0) -> None:
        self.db, self.session_id = db, session_id
        self._next_index = first_index
        self._starts: dict[UUID, dict[str, Any]] = {}
        self._per_task: dict[str, int] = {}
        self._step_of_call: dict[str, int] = {}  # tool_call_id → agent_step.id
        self.write_error: BaseException | None = None  # the first row that could not be written
        self.faults: list[str] = []  # tool calls that failed unexpectedly, in words

    @classmethod
    async def for_session(cls, db: Database, session_id: str) -> RunRecorder:
        """A resumed run's recorder: numbering continues after the steps already recorded, tool
        calls stay linked to the step that made them, earlier faults still count."""
        async with db.session() as s:
            steps = await repo.list_steps(s, session_id)
            invs = await repo.list_invocations(s, session_id)
        rec = cls(db, session_id, max((st.step_index for st in steps), default=0))
        for st in steps:
            for tc in (st.output_message or {}).get("data", {}).get("tool_calls") or []:
                if st.id is not None and tc.get("id"):
                    rec._step_of_call[tc["id"]] = st.id
        rec.faults = [
            f"{inv.tool_name}: {inv.error_message}"
            for inv in invs
            if not inv.success and is_unexpected_text(inv.error_message)
        ]
        return rec

    def _failed_write(self, what: str, exc: BaseException) -> None:
        log.error("could not record %s for session %s: %s", what, self.session_id, exc)
        if self.write_error is None:
            self.write_error = exc

    # --- model calls --------------------------------------------------------------------------

    async def on_chat_model_start(
        self,
        serialized: dict[str, Any],
        messages: list[list[BaseMessage]],
        *,
        run_id: UUID,
        metadata: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        meta = metadata or {}
        task = str(meta.get("langgraph_checkpoint_ns") or meta.get("langgraph_node") or "?")
        ordinal = self._per_task.get(task, 0)
        self._per_task[task] = ordinal + 1
        msgs = messages[0] if messages else []
        self._starts[run_id] = {
            "t0": time.perf_counter(),
            "agent": str(meta.get("langgraph_node") or "model"),
            "key": f"{task}#{ordinal}"[:191],
            "input": summarize_input(msgs),
            "hash": input_digest(msgs),
        }

    async def on_llm_end(self, response: LLMResult, *, run_id: UUID, **kwargs: Any) -> None:
        start = self._starts.pop(run_id, None)
        if start is None:
            return
        gen = (
            response.generations[0][0] if response.generations and response.generations[0] else None
        )
        msg = getattr(gen, "message", None)
        if not isinstance(msg, AIMessage):
            return
        usage = msg.usage_metadata or {}
        seconds = time.perf_counter() - start["t0"]
        metrics.record_model_call(start["agent"], seconds, usage)
        self._next_index += 1
        step = AgentStep(
            session_id=self.session_id,
            step_key=start["key"],
            step_index=self._next_index,
            agent_name=start["agent"],
            model_input=start["input"],
            model_output=summarize_output(msg),
            thought=thought_of(msg),
            output_message=message_to_dict(msg),
            input_hash=start["hash"],
            has_tool_call=bool(msg.tool_calls),
            duration_ms=int(seconds * 1000),
            token_count=usage.get("total_tokens"),
        )
        try:
            async with self.db.session() as s:
                row, created = await run_rows.append_step(s, step)
            if not created:
                self._next_index -= 1
            for tc in msg.tool_calls:
                self._step_of_call[tc["id"] or ""] = row.id  # type: ignore[assignment]
        except Exception as exc:
            self._next_index -= 1
            self._failed_write("a model step", exc)

    async def on_llm_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        # Not recorded as a step: a resumed run re-issues this call under the same key.
        start = self._starts.pop(run_id, None)
        if start is not None:
            metrics.record_model_error(start["agent"])

    # --- tool calls ---------------------------------------------------------------------------

    async def on_tool_start(
        self,
        serialized: dict[str, Any],
        input_str: str,
        *,
        run_id: UUID,
        inputs: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        self._starts[run_id] = {
            "t0": time.perf_counter(),
            "name": serialized.get("name", "tool"),
            "inputs": inputs if isinstance(inputs, dict) else {"input": input_str},
            "call_id": kwargs.get("tool_call_id") or str(run_id),
        }

    async def on_tool_end(self, output: Any, *, run_id: UUID, **kwargs: Any) -> None:
        start = self._starts.pop(run_id, None)
        if start is None:
            return
        msg = tool_message_of(output)
        content = _text(msg.content) if msg else _text(output)
        artifact = getattr(msg, "artifact", None) if msg else None
        status = getattr(msg, "status", "success") if msg else "success"
        await self._write(
            start,
            content,
            artifact if isinstance(artifact, dict) else None,
            status == "success",
            None,
        )

    async def on_tool_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        start = self._starts.pop(run_id, None)
        if start is None:
            return
        text = tool_error_text(error) if isinstance(error, Exception) else "the tool was stopped"
        if not is_expected(error):
            log.error(
                "tool %s failed in session %s", start["name"], self.session_id, exc_info=error
            )
            self.faults.append(f"{start['name']}: {text}")
        await self._write(start, text, None, False, text[:2000])

    async def _write(
        self,
        start: dict[str, Any],
        content: str,
        art: dict[str, Any] | None,
        ok: bool,
        error: str | None,
    ) -> None:
        inv = ToolInvocation(
            session_id=self.session_id,
            step_id=self._step_of_call.get(start["call_id"]),
            call_key=start["call_id"][:191],
            tool_name=start["name"],
            input_params={k: v for k, v in start["inputs"].items() if k != "runtime"},
            output_preview=content[:PREVIEW_CHARS],
            output_length=len(content),
            duration_ms=int((time.perf_counter() - start["t0"]) * 1000),
            success=ok,
            error_message=error,
        )
        if art is not None:
            searched = art.get("dedup_reason") != "budget_exhausted"
            inv.retrieval_layer = art.get("layer")
            inv.l0_match_count = art.get("l0_count")
            inv.l1_match_count = art.get("l1_count")
            inv.is_truncated = bool(art.get("is_truncated"))
            inv.relevance_level = art.get("relevance_level") if searched else None
            inv.dedup_reason = art.get("dedup_reason")
            inv.retrieval_details = {k: art.get(k) for k in DETAIL_KEYS}
        try:
            async with self.db.session() as s:
                await run_rows.append_invocation(s, inv)
        except Exception as exc:
            self._failed_write("a tool call", exc)
