"""Studio runs while a server holds the data folder: the server runs them over its HTTP API.

Milvus Lite lets one process open its folder; while ``make serve`` has it, LangGraph Studio's
process cannot look anything up (before: "知识库中未找到…" with a ``ConnectionConfigException`` in
the answer). Its runs then go to that server — ``POST /api/chat`` (the Studio thread id is the
conversation id) or ``POST /api/ai_ops`` — marked ``X-Session-Origin: studio``, so the answer is
the one HTTP gives and the session is recorded there, in ``/sessions``.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx
from langchain_core.messages import AIMessage
from langchain_core.runnables import RunnableConfig
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph

from graph.context import Context
from graph.nodes import begin
from graph.state import AgentState, AiOpsInput, ChatInput
from retrieval.served import Served, ServerRefused, ServerUnavailable

STUDIO_ORIGIN = {"X-Session-Origin": "studio"}


def _ai_ops(served: Served, thread: str | None, timeout: float) -> dict[str, Any]:
    """The AI-Ops stream read to its end: the ``done`` event carries the report."""
    headers = served.headers | STUDIO_ORIGIN
    url = f"{served.base_url}/api/ai_ops"
    event = ""
    try:
        with httpx.stream(
            "POST", url, json={"id": thread} if thread else {}, headers=headers, timeout=timeout
        ) as r:
            if not r.is_success:
                r.read()
                raise ServerRefused(f"the server on {served.where} answered {r.status_code}")
            for line in r.iter_lines():
                if line.startswith("event:"):
                    event = line.split(":", 1)[1].strip()
                elif line.startswith("data:") and event in ("done", "error"):
                    data = json.loads(line.split(":", 1)[1])
                    if event == "error":
                        raise ServerRefused(f"the run failed on {served.where}: {data['error']}")
                    return {"answer": data.get("answer") or "", "sessionId": data["sessionId"]}
    except httpx.HTTPError as exc:
        raise ServerUnavailable(f"no server answered on {served.where}: {exc}") from None
    raise ServerRefused(f"the stream from {served.where} ended without a result")


def served_graph(served: Served, flow: str, timeout: float = 600) -> CompiledStateGraph:
    """A graph whose run is made by the server: ``begin`` (the question, as ever), then the server."""

    async def run_on_server(state: AgentState, config: RunnableConfig) -> dict[str, Any]:
        thread = str((config.get("configurable") or {}).get("thread_id") or "") or None
        try:
            if flow == "AI_OPS":
                out = await asyncio.to_thread(_ai_ops, served, thread, timeout)
            else:
                body = {"question": state["question"]} | ({"id": thread} if thread else {})
                out = await asyncio.to_thread(
                    served.request,
                    "POST",
                    "/api/chat",
                    json=body,
                    timeout=timeout,
                    headers=STUDIO_ORIGIN,
                )
        except (ServerUnavailable, ServerRefused) as exc:
            answer = f"本次运行未能完成：{exc}"
            return {"answer": answer, "messages": [AIMessage(content=answer)]}
        return {
            "answer": out["answer"],
            "session_id": out["sessionId"],
            "messages": [AIMessage(content=out["answer"])],
        }

    schema = AiOpsInput if flow == "AI_OPS" else ChatInput
    g = StateGraph(AgentState, context_schema=Context, input_schema=schema)
    g.add_node("begin", begin(flow))  # type: ignore[arg-type]
    g.add_node("server", run_on_server)
    g.add_edge(START, "begin")
    g.add_edge("begin", "server")
    g.add_edge("server", END)
    return g.compile()
