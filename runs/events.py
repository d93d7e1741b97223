"""What a run streams to the UI, translated from LangGraph's stream chunks. Pure.

Events: ``node`` (a node started), ``node_end`` (it finished), ``tool_call``, ``tool_result``, ``token`` (answer text as the
model writes it), ``answer``. The runner adds ``session`` first and ``done`` or ``error`` last.
"""

from __future__ import annotations

from typing import Any

from langchain_core.messages import AIMessageChunk, ToolMessage

from graph.evidence import result_data

STREAMED_NODES = {"assistant", "answer"}  # nodes whose text is the user-facing answer
QUIET_NODES = {"begin"}  # the per-run reset: bookkeeping the live trace does not show
STEP_NODE = "executor"  # the loop's node that runs one plan step as the executor subgraph


def _tool_event(msg: ToolMessage) -> dict[str, Any]:
    event: dict[str, Any] = {
        "type": "tool_result",
        "tool": msg.name,
        "call_id": msg.tool_call_id,
        "status": msg.status,
    }
    if msg.name == "lookup_knowledge":
        # The fields the model was shown (``result_data`` says why they are not read from the
        # artifact); the citations come from the artifact's per-chunk scores.
        payload = result_data(msg)
        source = (payload.get("primary") or {}).get("source")
        event |= {
            "relevanceLevel": payload.get("relevanceLevel"),
            "retrievedDomainsThisSession": payload.get("retrievedDomainsThisSession"),
            "source": source,
            "message": payload.get("message"),
            "citations": citations(msg.artifact, source),
        }
    return event


def citations(artifact: Any, primary: str | None = None) -> list[dict[str, Any]]:
    """The chunk an answer citing each shown document points at: its best-ranked chunk (the
    lookup's per-chunk rows come best first), so the console can open exactly that chunk. An L0
    hit has no chunk rows: its document is cited whole (``chunkIndex`` None)."""
    rows = artifact.get("l1_scores") if isinstance(artifact, dict) else None
    out: dict[str, dict[str, Any]] = {}
    if primary:
        out[primary] = {"source": primary, "chunkIndex": None, "breadcrumb": None}
    for row in rows or []:
        source = row.get("source")
        if row.get("valid") and source and out.get(source, {}).get("chunkIndex") is None:
            out[source] = {
                "source": source,
                "chunkIndex": row.get("chunk_index"),
                "breadcrumb": row.get("breadcrumb"),
            }
    return list(out.values())


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


def _task_event(chunk: Any, quiet: set[str]) -> list[dict[str, Any]]:
    """A task starting (``input``) is a ``node`` event, one ending (``result``/``error``) a
    ``node_end``; the task id pairs them (``runs/timing.py`` adds the duration)."""
    if not isinstance(chunk, dict):
        return []
    name = str(chunk.get("name", ""))
    if name.startswith("__") or name in quiet:
        return []
    if "input" in chunk:
        return [{"type": "node", "node": name, "task_id": chunk.get("id")}]
    if "result" in chunk or "error" in chunk:
        return [{"type": "node_end", "node": name, "task_id": chunk.get("id")}]
    return []


def translate(mode: str, chunk: Any, ns: tuple[str, ...] | None = None) -> list[dict[str, Any]]:
    """The UI events in one ``astream(stream_mode=["tasks", "updates", "messages"])`` chunk.

    A plan step runs as a subgraph (``graph/executor.py``). A stream without subgraphs (``ns``
    None) shows it as one ``executor`` node whose tool events come when the step ends. A stream
    with them (``subgraphs=True``; ``ns`` is the chunk's namespace) shows it from inside as it
    runs — its model calls, tools and report, each result as it arrives — and then leaves out the
    parent's ``executor`` node, which only wraps them."""
    quiet = QUIET_NODES | ({STEP_NODE} if ns == () else set())
    if mode == "tasks":
        return _task_event(chunk, quiet)
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
        if node in quiet:
            continue
        # A ToolNode whose tools return Commands reports a list of updates.
        for update in raw if isinstance(raw, list) else [raw]:
            if isinstance(update, dict):
                events += _from_update(node, update)
    return events
