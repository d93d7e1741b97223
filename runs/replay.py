"""Replay a saved session, two ways, each recorded as a new session with ``replay_of`` set.

1. **Time travel** — list the session's checkpoints and re-run from any of them (LangGraph history).
   The checkpoint is copied into a fresh thread first, so the user's conversation is not forked.
2. **Re-run** — run the session again against the current code, from its input checkpoint, with a
   ``RecordingModel`` that plays back the recorded model outputs (``agent_step.output_message``) in
   order; fully offline. The report names the first step where the new run diverges: another
   agent asked, a different model input (e.g. a prompt edit), another tool call or arguments, a
   different tool result, or a different answer.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, messages_from_dict
from langchain_core.outputs import ChatGeneration, ChatResult
from langgraph.channels.delta import DeltaChannel
from langgraph.checkpoint.base import BaseCheckpointSaver

from graph.deps import AgentDeps, ModelSource
from graph.graphs import Graphs, compile_graphs
from persistence import repository as repo
from persistence.db import Database
from runs.recorder import input_digest
from runs.runner import Runner, RunResult


@dataclass
class Tape:
    """The recorded model outputs of a session, consumed in order by every RecordingModel."""

    steps: list[Any]
    cursor: int = 0
    notes: list[dict[str, Any]] = field(default_factory=list)

    def next(self, role: str, messages: list[BaseMessage]) -> AIMessage | None:
        index = self.cursor
        self.cursor += 1
        if index >= len(self.steps):
            self.notes.append({"index": index + 1, "agent": role, "kind": "extra_model_call"})
            return None
        rec = self.steps[index]
        if rec.agent_name != role:
            self.notes.append(
                {"index": index + 1, "agent": role, "kind": "agent", "recorded": rec.agent_name}
            )
        elif rec.input_hash and rec.input_hash != input_digest(messages):
            self.notes.append({"index": index + 1, "agent": role, "kind": "model_input"})
        msg = messages_from_dict([rec.output_message])[0] if rec.output_message else None
        return msg if isinstance(msg, AIMessage) else None


class RecordingModel(BaseChatModel):
    """Plays back the tape; past its end (or on a broken entry) answers with the fallback model."""

    role: str
    tape: Any
    fallback: Any = None

    @property
    def _llm_type(self) -> str:
        return "recording"

    def bind_tools(self, tools: Any, **kwargs: Any) -> BaseChatModel:  # type: ignore[override]
        fb = self.fallback.bind_tools(tools, **kwargs) if self.fallback is not None else None
        return self.model_copy(update={"fallback": fb})

    def _generate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kwargs: Any
    ) -> ChatResult:
        msg = self.tape.next(self.role, messages)
        if msg is None:
            if self.fallback is None:
                raise RuntimeError("replay ran past the recording and no fallback model is set")
            msg = self.fallback.invoke(messages)
        return ChatResult(generations=[ChatGeneration(message=msg)])


class ReplayModels:
    def __init__(self, tape: Tape, fallback: ModelSource) -> None:
        self.tape, self.fallback = tape, fallback

    def for_role(self, role: str, ctx: Any = None) -> BaseChatModel:
        return RecordingModel(role=role, tape=self.tape, fallback=self.fallback.for_role(role, ctx))


def _calls(step: Any) -> list[tuple[str, str]]:
    """The tool calls one model step asked for, as a sorted list: the calls of one step run in
    parallel, so their order carries no meaning and a replay compares them as a (multi)set."""
    msg = step.output_message or {}
    calls = (msg.get("data") or {}).get("tool_calls") or []
    return sorted(
        (c.get("name", ""), json.dumps(c.get("args", {}), sort_keys=True, ensure_ascii=False))
        for c in calls
    )


def _step_diffs(i: int, a: Any, b: Any) -> list[dict[str, Any]]:
    """How the i-th recorded and replayed model steps differ (either may be missing)."""
    if a is None or b is None:
        return [
            {
                "step": i + 1,
                "kind": "step_count",
                "recorded": a.agent_name if a else None,
                "replayed": b.agent_name if b else None,
            }
        ]
    diffs: list[dict[str, Any]] = []
    if a.agent_name != b.agent_name:
        diffs.append(
            {"step": i + 1, "kind": "agent", "recorded": a.agent_name, "replayed": b.agent_name}
        )
    elif a.input_hash and b.input_hash and a.input_hash != b.input_hash:
        diffs.append(
            {
                "step": i + 1,
                "agent": b.agent_name,
                "kind": "model_input",
                "recorded": a.model_input,
                "replayed": b.model_input,
            }
        )
    ca, cb = _calls(a), _calls(b)
    if ca != cb:
        same_tools = [n for n, _ in ca] == [n for n, _ in cb]
        diffs.append(
            {
                "step": i + 1,
                "agent": b.agent_name,
                "kind": "tool_arguments" if same_tools else "tool_call",
                "recorded": ca,
                "replayed": cb,
            }
        )
    return diffs


def _outcome(inv: Any) -> tuple[str, str, str, str]:
    """What a tool call returned, for comparison: its tool, arguments, level and output."""
    args = json.dumps(inv.input_params or {}, sort_keys=True, ensure_ascii=False, default=str)
    return (inv.tool_name, args, inv.relevance_level or "", inv.output_preview or "")


def _by_step(trace: Any) -> list[list[Any]]:
    """A trace's tool calls grouped by the model step that asked for them, in step order.

    Parallel calls of one step finish (and are recorded) in whatever order they complete, so
    only the grouping is stable across runs; calls with no known step form one last group."""
    position = {st.id: i for i, st in enumerate(trace.steps)}
    groups: list[list[Any]] = [[] for _ in range(len(trace.steps) + 1)]
    for inv in trace.invocations:
        groups[position.get(inv.step_id, len(trace.steps))].append(inv)
    return [sorted(g, key=_outcome) for g in groups if g]


def _result_diffs(recorded: Any, replayed: Any) -> list[dict[str, Any]]:
    """Tool calls whose result (relevance level or output) differs. Within a step the calls are
    matched as a set; ``tool_call`` counts calls in that canonical order (step, then sorted)."""
    pairs = [
        pair
        for xs, ys in zip(_by_step(recorded), _by_step(replayed), strict=False)
        for pair in zip(xs, ys, strict=False)
    ]
    return [
        {
            "tool_call": j + 1,
            "kind": "tool_result",
            "tool": y.tool_name,
            "recorded": x.relevance_level or (x.output_preview or "")[:120],
            "replayed": y.relevance_level or (y.output_preview or "")[:120],
        }
        for j, (x, y) in enumerate(pairs)
        if _outcome(x) != _outcome(y)
    ]


def divergence(recorded: Any, replayed: Any, notes: list[dict[str, Any]]) -> dict[str, Any]:
    """Compare two traces step by step; the first difference is the headline."""
    rs, ps = recorded.steps, replayed.steps
    diffs = [
        d
        for i in range(max(len(rs), len(ps)))
        for d in _step_diffs(i, rs[i] if i < len(rs) else None, ps[i] if i < len(ps) else None)
    ]
    diffs += _result_diffs(recorded, replayed)
    answers = (recorded.session.answer or ""), (replayed.session.answer or "")
    same_answer = answers[0] == answers[1]
    if not same_answer:
        diffs.append({"kind": "answer", "recorded": answers[0][:300], "replayed": answers[1][:300]})
    return {
        "original_session_id": recorded.session.session_id,
        "replay_session_id": replayed.session.session_id,
        "identical": not diffs,
        "first_divergence": diffs[0] if diffs else None,
        "differences": diffs,
        "replay_notes": notes,
        "recorded_steps": len(rs),
        "replayed_steps": len(ps),
        "same_answer": same_answer,
    }


class StoreNotOpen(RuntimeError):
    """The knowledge store a replay would look things up in cannot be opened here: replaying
    would judge the recorded run against lookups that found nothing, so it is not done."""


class Replayer:
    """Replays sessions recorded in ``db`` by ``graphs``; ``deps`` rebuild them for a re-run.

    ``store_check`` names why the knowledge store cannot be read (None: it can); a re-run refuses
    rather than report a divergence that only says the store was closed."""

    def __init__(
        self,
        db: Database,
        graphs: Graphs,
        checkpointer: BaseCheckpointSaver,
        deps: AgentDeps,
        store_check: Callable[[], Awaitable[str | None]] | None = None,
    ) -> None:
        self.db, self.graphs, self.checkpointer, self.deps = db, graphs, checkpointer, deps
        self.runner = Runner(db, graphs)
        self.store_check = store_check

    async def _store_open(self) -> None:
        reason = await self.store_check() if self.store_check else None
        if reason:
            raise StoreNotOpen(
                f"not replayed: the knowledge store cannot be opened here ({reason}); a replay "
                "against it would compare the recorded lookups with empty ones"
            )

    async def _trace(self, session_id: str) -> Any:
        async with self.db.session() as db:
            trace = await repo.get_trace(db, session_id)
        if trace is None:
            raise LookupError(f"session {session_id} does not exist")
        return trace

    async def checkpoints(self, session_id: str) -> list[dict[str, Any]]:
        """The session's checkpoints, oldest first (id, step, source, next nodes)."""
        trace = await self._trace(session_id)
        graph = self.graphs.for_flow(trace.session.agent_flow)
        out = []
        async for st in graph.aget_state_history(
            {"configurable": {"thread_id": trace.session.thread_id}}
        ):
            if st.metadata and st.metadata.get("session_id") == session_id:
                out.append(
                    {
                        "checkpoint_id": st.config["configurable"]["checkpoint_id"],
                        "step": st.metadata.get("step"),
                        "source": st.metadata.get("source"),
                        "next": list(st.next),
                    }
                )
        return list(reversed(out))

    @staticmethod
    async def _whole(graph: Any, tup: Any) -> dict[str, Any]:
        """The checkpoint with the values of its delta channels written in.

        A stored checkpoint holds only what its step added to a ``DeltaChannel`` (the message
        lists); the rest is read from its ancestors on the same thread, which a copy on a new
        thread does not have. A plain stored value is read as the channel's whole value."""
        values = tup.checkpoint["channel_values"]
        missing = [
            k
            for k, ch in graph.channels.items()
            if isinstance(ch, DeltaChannel)
            and k in tup.checkpoint["channel_versions"]
            and k not in values
        ]
        if not missing:
            return tup.checkpoint
        state = await graph.aget_state(tup.config)
        filled = {k: list(state.values.get(k) or []) for k in missing}
        return {**tup.checkpoint, "channel_values": {**values, **filled}}

    async def _fork(self, graph: Any, thread_id: str, checkpoint_id: str) -> tuple[str, str]:
        """Copy one checkpoint (and its pending writes) into a new thread; return (thread, id)."""
        saver = self.checkpointer
        tup = await saver.aget_tuple(
            {
                "configurable": {
                    "thread_id": thread_id,
                    "checkpoint_ns": "",
                    "checkpoint_id": checkpoint_id,
                }
            }
        )
        if tup is None:
            raise LookupError(f"checkpoint {checkpoint_id} not found on thread {thread_id}")
        new_thread = f"replay-{uuid.uuid4().hex}"
        cfg = await saver.aput(
            {"configurable": {"thread_id": new_thread, "checkpoint_ns": ""}},
            await self._whole(graph, tup),
            tup.metadata,
            tup.checkpoint["channel_versions"],
        )
        by_task: dict[str, list[tuple[str, Any]]] = {}
        for task_id, channel, value in tup.pending_writes or []:
            by_task.setdefault(task_id, []).append((channel, value))
        for task_id, writes in by_task.items():
            await saver.aput_writes(cfg, writes, task_id)
        return new_thread, cfg["configurable"]["checkpoint_id"]

    async def from_checkpoint(self, session_id: str, checkpoint_id: str) -> RunResult:
        """Time travel: continue from any checkpoint of the session with the current models."""
        trace = await self._trace(session_id)
        await self._store_open()
        graph = self.graphs.for_flow(trace.session.agent_flow)
        thread, cid = await self._fork(graph, trace.session.thread_id or "", checkpoint_id)
        return await self.runner.run(
            trace.session.query,
            flow=trace.session.agent_flow,
            thread_id=thread,
            resume=True,
            checkpoint_id=cid,
            replay_of=session_id,
        )

    async def rerun(self, session_id: str) -> dict[str, Any]:
        """Re-run against the current code with the recorded model outputs; report divergence."""
        recorded = await self._trace(session_id)
        await self._store_open()
        start = next(
            (c for c in await self.checkpoints(session_id) if c["source"] == "input"), None
        )
        if start is None:
            raise LookupError(f"session {session_id} has no input checkpoint to replay from")
        tape = Tape(list(recorded.steps))
        graphs = compile_graphs(
            replace(self.deps, models=ReplayModels(tape, self.deps.models)), self.checkpointer
        )
        graph = self.graphs.for_flow(recorded.session.agent_flow)
        thread, cid = await self._fork(
            graph, recorded.session.thread_id or "", start["checkpoint_id"]
        )
        result = await self.runner.run(
            recorded.session.query,
            flow=recorded.session.agent_flow,
            thread_id=thread,
            graph=graphs.for_flow(recorded.session.agent_flow),
            resume=True,
            checkpoint_id=cid,
            replay_of=session_id,
        )
        replayed = await self._trace(result.session_id)
        report = divergence(recorded, replayed, tape.notes)
        report["status"] = result.status
        return report
