"""The one place both graphs are compiled."""

from __future__ import annotations

from dataclasses import dataclass

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph.state import CompiledStateGraph

from graph.aiops import build_aiops_graph
from graph.chat import build_chat_graph
from graph.deps import AgentDeps
from graph.nodes import Agents


@dataclass(frozen=True)
class Graphs:
    chat: CompiledStateGraph
    aiops: CompiledStateGraph

    def for_flow(self, flow: str) -> CompiledStateGraph:
        return self.aiops if flow == "AI_OPS" else self.chat


def compile_graphs(deps: AgentDeps, checkpointer: BaseCheckpointSaver | None = None) -> Graphs:
    agents = Agents(deps)
    return Graphs(
        chat=build_chat_graph(agents).compile(checkpointer=checkpointer, name="chat"),
        aiops=build_aiops_graph(agents).compile(checkpointer=checkpointer, name="aiops"),
    )
