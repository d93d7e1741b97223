"""The supervisor → planner ⇄ executor loop both graphs share; each graph adds its ending."""

from __future__ import annotations

from langgraph.graph import StateGraph
from langgraph.prebuilt import ToolNode, tools_condition
from langgraph.runtime import Runtime
from langgraph.types import Command

from graph.context import Context
from graph.nodes import Agents
from graph.state import SCRATCH, AgentState
from tools.errors import tool_error_text


def add_loop(g: StateGraph, agents: Agents, tools: list, ending: str) -> None:
    """Adds supervisor, planner, executor (+ its tools); the supervisor's ``finish`` goes to ``ending``."""

    async def supervisor(state: AgentState, runtime: Runtime[Context]) -> Command:
        nxt, update = await agents.supervise(state, runtime)
        return Command(goto=ending if nxt == "finish" else nxt, update=update)

    g.add_node("supervisor", supervisor, destinations=("planner", "executor", ending))
    g.add_node("planner", agents.planner)
    g.add_node("executor", agents.executor)
    g.add_node(
        "executor_tools", ToolNode(tools, messages_key=SCRATCH, handle_tool_errors=tool_error_text)
    )
    g.add_node("executor_done", agents.executor_done)
    g.add_edge("planner", "supervisor")
    g.add_conditional_edges(
        "executor",
        lambda s: tools_condition(s, messages_key=SCRATCH),
        {"tools": "executor_tools", "__end__": "executor_done"},
    )
    g.add_conditional_edges("executor_tools", agents.after_tools, ["executor", "executor_done"])
    g.add_edge("executor_done", "supervisor")
