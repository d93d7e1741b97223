"""LangChain tools the agents call; ``build_tools`` binds them to the running services."""

from __future__ import annotations

from langchain_core.tools import BaseTool

from retrieval.knowledge import KnowledgeBase
from settings import Settings
from tools.clock import make_time_tool
from tools.knowledge import make_lookup_tool
from tools.observability import make_alerts_tool, make_logs_tool


def build_tools(kb: KnowledgeBase, settings: Settings, *, messages_key: str) -> list[BaseTool]:
    """``messages_key``: the graph state key the lookup tool's ToolMessages are written to."""
    return [
        make_lookup_tool(kb, messages_key=messages_key),
        make_time_tool(),
        make_alerts_tool(settings.prometheus_url),
        make_logs_tool(settings.loki_url),
    ]
