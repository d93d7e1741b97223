"""The runner: runs a graph as one diagnosis session, RUNNING → SUCCESS | FAILED, recorded step by
step. One per process, built by ``services.py`` and handed to the API, replay, the CLIs, the eval
suite and Studio, so every run is leased for ``RUN_LEASE_SECONDS`` and its background work (closing
retries, the evidence score) is drained at shutdown.

It puts the seams together: ``start.py`` opens a run, ``stream.py`` streams it, ``finish.py``
closes and scores it, ``resume.py`` continues an unfinished one.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from langgraph.graph.state import CompiledStateGraph

from graph.context import Context
from graph.graphs import Graphs
from persistence.db import Database
from runs.finish import Finisher
from runs.recorder import RunRecorder
from runs.resume import Resumer
from runs.run import Launch, Run, RunResult
from runs.start import open_run, run_config
from runs.stream import collect, stream_run

DEFAULT_LEASE_S = 30.0


class Runner:
    def __init__(self, db: Database, graphs: Graphs, lease_s: float = DEFAULT_LEASE_S) -> None:
        self.db, self.graphs, self.lease_s = db, graphs, lease_s
        self.finisher = Finisher(db)
        self.resumer = Resumer(db, graphs, lease_s, self.finisher, self.collect)

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
        """The session of a new run, RUNNING and leased (``runs/start.py``)."""
        return await open_run(
            self.db,
            self.lease_s,
            question,
            flow=flow,
            thread_id=thread_id,
            replay_of=replay_of,
            origin=origin,
            session_id=session_id,
        )

    config = staticmethod(run_config)

    def events(self, run: Run, launch: Launch | None = None) -> AsyncIterator[dict[str, Any]]:
        """Stream an opened ``run``: session, node, tool_call, tool_result, token, answer, then done
        or error (``runs/stream.py``); ``launch`` says how its graph starts (from its question)."""
        return stream_run(
            run,
            launch or Launch(),
            db=self.db,
            graphs=self.graphs,
            config=self.config,
            finisher=self.finisher,
        )

    async def collect(self, run: Run, launch: Launch | None = None) -> RunResult:
        """Stream an opened ``run`` to its end; its outcome."""
        return await collect(self.events(run, launch), run.thread_id)

    async def run(
        self,
        question: str,
        *,
        flow: str = "CHAT",
        thread_id: str | None = None,
        origin: str | None = None,
        context: Context | None = None,
        graph: CompiledStateGraph | None = None,
    ) -> RunResult:
        """Ask ``question`` (on ``thread_id``'s conversation) and run it to its end."""
        run = await self.open(question, flow=flow, thread_id=thread_id, origin=origin)
        return await self.collect(run, Launch(graph=graph, context=context))

    async def resume(self, session_id: str, context: Context | None = None) -> RunResult:
        """Continue an interrupted or failed run, same session, no row written twice; raises
        ``LookupError``, ``persistence.leases.SessionBusy`` or ``ValueError`` (``runs/resume.py``)."""
        return await self.resumer.resume(session_id, context)

    async def close(
        self,
        run: Run,
        recorder: RunRecorder,
        answer: str | None,
        failure: BaseException | None = None,
    ) -> str | None:
        """Close a session whose graph someone else streamed (LangGraph Studio's server), as
        ``events`` closes its own: the recorder's faults or ``failure`` make it FAILED."""
        return await self.finisher.close(run, recorder, answer, failure)

    async def drain(self) -> None:
        """Wait for background scoring and closing (tests and shutdown)."""
        await self.finisher.drain()
