"""What the graph nodes need from the running system — and nothing more.

The composition root (``services.py``) builds one; tests and replay swap single parts with
``dataclasses.replace`` (e.g. a recording model source).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Protocol

from langchain_core.language_models import BaseChatModel
from langchain_core.tools import BaseTool

from graph.context import Context
from graph.prompts import Prompts


class ModelSource(Protocol):
    """Gives the chat model for one role of one run (``llm.factory.ModelFactory`` in production)."""

    def for_role(self, role: str, ctx: Context | None = None) -> BaseChatModel: ...


@dataclass(frozen=True)
class AgentDeps:
    models: ModelSource
    prompts: Prompts
    tools: list[BaseTool]
    # The planner's YAML map of knowledge domains, read fresh per planner call (other workers may
    # have changed documents): ``knowledge_map(focus, budget)`` ranks the domains by the focus
    # texts (the question's symptoms, or the alerts) and stays within ``budget`` tokens.
    knowledge_map: Callable[..., Awaitable[str]]
    # The knowledge domains a question names by exact keyword (L0), for simple/complex routing.
    named_domains: Callable[[str], set[str]]
    # A runbook's whole text by its path, for the AI-Ops report (a lookup returns an excerpt; the
    # cause and action sections may lie outside it). None: the report reads the excerpts only.
    read_runbook: Callable[[str], str | None] | None = None
