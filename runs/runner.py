"""The runner: runs a graph as one diagnosis session, RUNNING → SUCCESS | FAILED, recorded step by
step. One per process, built by ``services.py`` and handed to the API, replay, the CLIs, the eval
suite and Studio, so every run is leased for ``RUN_LEASE_SECONDS`` and its background work (closing
retries, the evidence score) is drained at shutdown.

It puts the seams together: ``start.py`` opens a run, ``stream.py`` streams it, ``finish.py``
closes and scores it, ``resume.py`` continues an unfinished one.
"""

from __future__ import annotations

import functools
from collections.abc import AsyncIterator
from typing import Any

from langgraph.graph.state import CompiledStateGraph

from graph.context import Context
from graph.graphs import Graphs
from persistence.db import Database
from runs.finish import Finisher
from runs.resume import Resumer
from runs.run import Launch, Run, RunResult
from runs.start import open_run, run_config
from runs.stream import collect, stream_run

DEFAULT_LEASE_S = 30.0


class Runner:
    def __init__(self, db: Database, graphs: Graphs, lease_s: float = DEFAULT_LEASE_S) -> None:
        self.db, self.graphs, self.lease_s = db, graphs, lease_s
        # open(question, *, flow, thread_id, replay_of, origin, session_id) → a new run's session,
        # RUNNING and leased (``runs/start.py``)
        self.finisher = Finisher(db)
        self.open = functools.partial(open_run, db, lease_s, self.finisher.spawn)
        self.resumer = Resumer(db, graphs, lease_s, self.finisher, self.collect)

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

    async def drain(self) -> None:
        """Wait for background scoring and closing (tests and shutdown)."""
        await self.finisher.drain()
