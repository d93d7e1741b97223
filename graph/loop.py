"""The supervisor → planner ⇄ executor loop both graphs share; each graph adds its ending.

The executor is a compiled subgraph (``graph/executor.py``): the ``executor`` node hands it the
current plan step and adds the ``StepReport`` it returns (and the step's messages) to the run.
"""

from __future__ import annotations

from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.graph import StateGraph
from langgraph.runtime import Runtime
from langgraph.types import Command

from graph.context import Context
from graph.executor import OLD_STEP_NODES, build_executor, old_step_node, refuse_mid_step
from graph.nodes import Agents
from graph.state import AgentState


def add_loop(g: StateGraph, agents: Agents, ending: str) -> None:
    """Adds supervisor, planner and executor; the supervisor's ``finish`` goes to ``ending``."""
    step = build_executor(agents.deps)

    async def supervisor(state: AgentState, runtime: Runtime[Context]) -> Command:
        nxt, update = await agents.supervise(state, runtime)
        return Command(goto=ending if nxt == "finish" else nxt, update=update)

    async def executor(state: AgentState, config: RunnableConfig) -> dict[str, Any]:
        refuse_mid_step(state["scratch"], state["executor_feedback"])
        out = await step.ainvoke(agents.step_input(state), config)
        return agents.after_step(state, out)  # type: ignore[arg-type]

    g.add_node("supervisor", supervisor, destinations=("planner", "executor", ending))
    g.add_node("planner", agents.planner)
    g.add_node("executor", executor)
    g.add_edge("planner", "supervisor")
    g.add_edge("executor", "supervisor")
    for name in OLD_STEP_NODES:  # only a run checkpointed by the earlier loop reaches them
        g.add_node(name, old_step_node)
