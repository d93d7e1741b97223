"""The one place both graphs are compiled."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph.state import CompiledStateGraph

from graph.aiops import build_aiops_graph
from graph.chat import build_chat_graph
from graph.nodes import Agents

if TYPE_CHECKING:
    from services import Services


@dataclass(frozen=True)
class Graphs:
    chat: CompiledStateGraph
    aiops: CompiledStateGraph

    def for_flow(self, flow: str) -> CompiledStateGraph:
        return self.aiops if flow == "AI_OPS" else self.chat


def compile_graphs(services: Services, checkpointer: BaseCheckpointSaver | None = None) -> Graphs:
    agents = Agents(services)
    tools = services.tools
    return Graphs(
        chat=build_chat_graph(agents, tools).compile(checkpointer=checkpointer, name="chat"),
        aiops=build_aiops_graph(agents, tools).compile(checkpointer=checkpointer, name="aiops"),
    )
