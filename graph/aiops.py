"""The AI-Ops graph: supervisor → planner ⇄ executor until FINISH, then the evidence-only report."""

from __future__ import annotations

from langgraph.graph import END, START, StateGraph

from graph.context import Context
from graph.loop import add_loop
from graph.nodes import Agents, begin
from graph.state import AgentState, AiOpsInput

AIOPS_TASK = "分析当前活跃告警：查询告警，逐条检索处理手册并查询相关服务日志，输出告警分析报告。"


def build_aiops_graph(agents: Agents) -> StateGraph:
    g = StateGraph(AgentState, context_schema=Context, input_schema=AiOpsInput)
    g.add_node("begin", begin("AI_OPS", default_question=AIOPS_TASK))
    g.add_node("report", agents.report)
    add_loop(g, agents, ending="report")
    g.add_edge(START, "begin")
    g.add_edge("begin", "supervisor")
    g.add_edge("report", END)
    return g
