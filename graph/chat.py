"""The chat graph: classify → simple ReAct assistant, or the supervisor/planner/executor loop."""

from __future__ import annotations

from langgraph.graph import END, START, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition

from graph.context import Context
from graph.loop import add_loop
from graph.nodes import Agents, begin
from graph.state import SCRATCH, AgentState, ChatInput
from tools.errors import tool_error_text


def build_chat_graph(agents: Agents) -> StateGraph:
    g = StateGraph(AgentState, context_schema=Context, input_schema=ChatInput)
    g.add_node("begin", begin("CHAT"))
    g.add_node("classify", agents.classify)
    g.add_node("assistant", agents.assistant)
    g.add_node(
        "assistant_tools",
        ToolNode(agents.deps.tools, messages_key=SCRATCH, handle_tool_errors=tool_error_text),
    )
    g.add_node("finish_simple", agents.finish_simple)
    g.add_node("answer", agents.answer)
    add_loop(g, agents, ending="answer")
    g.add_edge(START, "begin")
    g.add_edge("begin", "classify")
    g.add_conditional_edges(
        "assistant",
        lambda s: tools_condition(s, messages_key=SCRATCH),
        {"tools": "assistant_tools", "__end__": "finish_simple"},
    )
    g.add_edge("assistant_tools", "assistant")
    g.add_edge("finish_simple", END)
    g.add_edge("answer", END)
    return g
