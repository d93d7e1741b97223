"""Graph factories for LangGraph Studio / ``langgraph dev`` (see ``langgraph.json``).

The server calls a factory on every access. Only a run needs the running system (migrated
database, imported knowledge base, models): the services start once per server process, in the
background from the first access on, and a run waits for them. Every other access — input and
context schemas, drawing the graph, reading a thread's state — gets the same graph compiled over an
outline (no tools, no stores), which costs milliseconds, so Studio opens at once instead of
waiting for the first knowledge-base import. The graphs are compiled without a checkpointer
because the LangGraph server supplies its own. Port 2024 is taken on our machines: run
``langgraph dev --port 2025``.

Every run is a session (origin ``studio``), recorded through the same runner and recorder as HTTP
runs (``runs/studio_session.py``), so it appears in ``/sessions``. While a server holds the Milvus
Lite folder (``make serve`` beside Studio), this process cannot open it: runs then go to that
server over its HTTP API (``graph/served_graph.py``), which records them.
"""

from __future__ import annotations

import asyncio
import os
import sys

from langgraph.graph.state import CompiledStateGraph
from langgraph_sdk.runtime import ServerRuntime

from graph.aiops import AIOPS_TASK
from graph.deps import AgentDeps
from graph.graphs import Graphs, compile_graphs
from graph.prompts import Prompts
from graph.served_graph import served_graph
from llm.factory import ModelFactory
from retrieval.served import Served, held_by_server
from runs.studio_session import recorded
from services import Services
from settings import get_settings

_services: Services | None = None
_starting: asyncio.Task[Services] | None = None
_outline: Graphs | None = None


async def _migrate(database_url: str) -> None:
    # The dev server flags blocking I/O inside any event loop, and Alembic's env runs one; a child
    # process keeps migrations out of the server's loops entirely.
    env = {**os.environ, "DATABASE_URL": database_url}
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "persistence",
        "migrate",
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    out, _ = await proc.communicate()
    if proc.returncode != 0:
        raise RuntimeError(f"migration failed: {out.decode(errors='replace')[-2000:]}")


async def _start() -> Services:
    global _services
    settings = get_settings()
    await _migrate(settings.database_url)
    _services = await Services.start(settings, migrate=False, with_checkpointer=False)
    return _services


def _kick() -> asyncio.Task[Services]:
    """The task starting the services; created by the first access, again after a failed start."""
    global _starting
    if _starting is None or (_starting.done() and _starting.exception() is not None):
        _starting = asyncio.create_task(_start())
    return _starting


async def _started() -> Services:
    """The running services; the first caller starts them, later ones wait for that start."""
    return _services if _services is not None else await asyncio.shield(_kick())


async def _no_map(*_args: object) -> str:
    return ""


def _outline_graphs() -> Graphs:
    """Both graphs over deps that are never called: their nodes, edges and schemas, for Studio."""
    global _outline
    if _outline is None:
        deps = AgentDeps(
            models=ModelFactory(get_settings()),
            prompts=Prompts({}),
            tools=[],
            knowledge_map=_no_map,
            named_domains=lambda _question: set(),
        )
        _outline = compile_graphs(deps)
    return _outline


def _held() -> bool:
    """Another process (a server) holds the Milvus Lite folder; not this one, started or starting."""
    ours = _services is not None or (_starting is not None and not _starting.done())
    return not ours and held_by_server(get_settings())


async def _graphs(runtime: ServerRuntime) -> Graphs:
    if _services is not None and _services.graphs is not None:
        return _services.graphs
    if runtime.execution_runtime is not None:  # a run: it needs the real thing
        graphs = (await _started()).graphs
        assert graphs is not None
        return graphs
    if not _held():
        _kick()  # start in the background: the first run will likely find everything ready
    return _outline_graphs()


async def _run_graph(runtime: ServerRuntime, flow: str) -> CompiledStateGraph:
    """The graph for this access; for a run, bound to a new recorded session."""
    if runtime.execution_runtime is not None and _held():
        return served_graph(Served.of(get_settings()), flow)
    graphs = await _graphs(runtime)
    graph = graphs.aiops if flow == "AI_OPS" else graphs.chat
    if runtime.execution_runtime is None:
        return graph
    assert _services is not None  # the process's one runner: it tracks background scoring
    return recorded(graph, _services.runner(), flow, AIOPS_TASK if flow == "AI_OPS" else "")


async def chat(runtime: ServerRuntime) -> CompiledStateGraph:
    return await _run_graph(runtime, "CHAT")


async def aiops(runtime: ServerRuntime) -> CompiledStateGraph:
    return await _run_graph(runtime, "AI_OPS")
