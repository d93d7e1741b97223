"""What one recorded session did, read back: its row, its tool results in full (from its checkpoints,
else the records' previews), its model calls and tokens. Used to judge eval runs and to export a
case as a scenario."""

from __future__ import annotations

import json
from typing import Any

from graph.evidence import Evidence
from graph.graphs import Graphs
from persistence import repository as repo
from persistence.db import Database
from runs.run_evidence import run_evidence


def _preview_evidence(invocations: list[Any]) -> list[Evidence]:
    """Tool results from the records' previews, when the run's checkpoints are gone."""
    out = []
    for inv in invocations:
        text = inv.output_preview or ""
        try:
            data = json.loads(text)
        except ValueError:
            data = {}
        out.append(
            Evidence(
                inv.tool_name,
                dict(inv.input_params or {}),
                inv.call_key,
                bool(inv.success),
                text,
                data if isinstance(data, dict) else {},
            )
        )
    return out


async def observe_session(
    db: Database, graphs: Graphs | None, session_id: str
) -> tuple[Any, list[Evidence], int, int]:
    """(session row, tool results, model calls, tokens) of one recorded session."""
    async with db.session() as s:
        trace = await repo.get_trace(s, session_id)
    if trace is None:
        raise LookupError(f"session {session_id} does not exist")
    row = trace.session
    evidence = None
    if graphs is not None and row.thread_id:
        graph = graphs.for_flow(row.agent_flow)
        evidence = await run_evidence(graph, row.thread_id, session_id)
    if evidence is None:
        evidence = _preview_evidence(trace.invocations)
    tokens = sum(st.token_count or 0 for st in trace.steps)
    return row, evidence, len(trace.steps), tokens
