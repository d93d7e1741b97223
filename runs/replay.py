"""Replay a saved session, two ways, each recorded as a new session with ``replay_of`` set, on the
one runner every run uses (its lease, its shutdown drain).

1. **Time travel** — list the session's checkpoints and re-run from any of them (LangGraph history).
   The checkpoint is copied into a fresh thread first, so the user's conversation is not forked.
2. **Re-run** — run the session again against the current code, from its input checkpoint, with
   models that play back the recorded outputs (``runs/tape.py``) in order; fully offline. The report
   (``runs/divergence.py``) names the first step where the new run diverges.
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable
from dataclasses import replace
from typing import Any

from langgraph.channels.delta import DeltaChannel
from langgraph.checkpoint.base import BaseCheckpointSaver

from graph.deps import AgentDeps
from graph.graphs import compile_graphs
from persistence import repository as repo
from runs.divergence import divergence
from runs.run import Launch, RunResult
from runs.runner import Runner
from runs.tape import ReplayModels, Tape


class StoreNotOpen(RuntimeError):
    """The knowledge store a replay would look things up in cannot be opened here: replaying
    would judge the recorded run against lookups that found nothing, so it is not done."""


class Replayer:
    """Replays, on ``runner``, the sessions it recorded; ``deps`` rebuild its graphs for a re-run
    (over ``checkpointer``, where the recorded checkpoints are).

    ``store_check`` names why the knowledge store cannot be read (None: it can); a re-run refuses
    rather than report a divergence that only says the store was closed."""

    def __init__(
        self,
        runner: Runner,
        checkpointer: BaseCheckpointSaver,
        deps: AgentDeps,
        store_check: Callable[[], Awaitable[str | None]] | None = None,
    ) -> None:
        self.runner, self.checkpointer, self.deps = runner, checkpointer, deps
        self.db, self.graphs = runner.db, runner.graphs
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

    async def _replay(self, recorded: Any, thread: str, launch: Launch) -> RunResult:
        """A new session on ``thread``, ``replay_of`` the recorded one, run to its end."""
        session = recorded.session
        run = await self.runner.open(
            session.query,
            flow=session.agent_flow,
            thread_id=thread,
            replay_of=session.session_id,
        )
        return await self.runner.collect(run, launch)

    async def from_checkpoint(self, session_id: str, checkpoint_id: str) -> RunResult:
        """Time travel: continue from any checkpoint of the session with the current models."""
        trace = await self._trace(session_id)
        await self._store_open()
        graph = self.graphs.for_flow(trace.session.agent_flow)
        thread, cid = await self._fork(graph, trace.session.thread_id or "", checkpoint_id)
        return await self._replay(trace, thread, Launch(resume=True, checkpoint_id=cid))

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
        replay = graphs.for_flow(recorded.session.agent_flow)
        result = await self._replay(
            recorded, thread, Launch(graph=replay, resume=True, checkpoint_id=cid)
        )
        replayed = await self._trace(result.session_id)
        report = divergence(recorded, replayed, tape.notes)
        report["status"] = result.status
        return report
