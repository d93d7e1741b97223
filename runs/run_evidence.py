"""What the tools of one recorded run returned, in full, read back from the run's checkpoints.

``tool_invocation`` keeps a 500-character preview of each result; the complete tool messages live in
the run's checkpointed ``scratch``. The incident eval suite reads them to judge a run on what its
tools really returned, and a case exported as a scenario takes its world from them.
"""

from __future__ import annotations

from langgraph.graph.state import CompiledStateGraph

from graph.evidence import Evidence, collect


async def run_evidence(
    graph: CompiledStateGraph, thread_id: str, session_id: str
) -> list[Evidence] | None:
    """The tool results of session ``session_id`` on ``thread_id``: from the newest checkpoint
    of that run (a thread holds one run per question). ``None`` when no checkpoint of the run is
    left (another checkpointer, or pruned): the caller falls back to the recorded previews."""
    config = {"configurable": {"thread_id": thread_id}}
    async for snapshot in graph.aget_state_history(config):  # newest first
        if (snapshot.metadata or {}).get("session_id") == session_id:
            return collect((snapshot.values or {}).get("scratch") or [])
    return None
