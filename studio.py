"""Graph factories for LangGraph Studio / ``langgraph dev`` (see ``langgraph.json``).

The services start once per server process on the first request; the graphs are compiled without
a checkpointer because the LangGraph server supplies its own. Port 2024 is taken on our machines:
run ``langgraph dev --port 2025``.
"""

from __future__ import annotations

import asyncio
import os
import sys

from langgraph.graph.state import CompiledStateGraph

from services import Services
from settings import get_settings

_services: Services | None = None
_lock = asyncio.Lock()


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


async def _started() -> Services:
    global _services
    async with _lock:
        if _services is None:
            settings = get_settings()
            await _migrate(settings.database_url)
            _services = await Services.start(settings, migrate=False, with_checkpointer=False)
    return _services


async def chat() -> CompiledStateGraph:
    graphs = (await _started()).graphs
    assert graphs is not None
    return graphs.chat


async def aiops() -> CompiledStateGraph:
    graphs = (await _started()).graphs
    assert graphs is not None
    return graphs.aiops
