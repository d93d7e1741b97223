"""The supervisor → planner ⇄ executor loop both graphs share; each graph adds its ending."""

from __future__ import annotations

from langgraph.graph import StateGraph
from langgraph.prebuilt import ToolNode, tools_condition

from graph.nodes import Agents
from tools.knowledge import SCRATCH


def add_loop(g: StateGraph, agents: Agents, tools: list, ending: str) -> None:
    """Adds supervisor, planner, executor (+ its tools) and routes ``finish`` to ``ending``."""
    g.add_node("supervisor", agents.supervisor)
    g.add_node("planner", agents.planner)
    g.add_node("executor", agents.executor)
    g.add_node("executor_tools", ToolNode(tools, messages_key=SCRATCH, handle_tool_errors=True))
    g.add_node("executor_done", agents.executor_done)
    g.add_conditional_edges(
        "supervisor",
        lambda s: s.get("next") or "finish",
        {"planner": "planner", "executor": "executor", "finish": ending},
    )
    g.add_edge("planner", "supervisor")
    g.add_conditional_edges(
        "executor",
        lambda s: tools_condition(s, messages_key=SCRATCH),
        {"tools": "executor_tools", "__end__": "executor_done"},
    )
    g.add_edge("executor_tools", "executor")
    g.add_edge("executor_done", "supervisor")
