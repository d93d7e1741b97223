"""``lookup_knowledge``: the hybrid knowledge-base lookup as a LangChain tool with action memory.

The session's memory is read from graph state and updated through the returned ``Command``; the
model sees only the payload (no scores); raw scores travel as the ToolMessage's ``artifact``.
"""

from __future__ import annotations

import json
from typing import Any

from langchain_core.messages import ToolMessage
from langchain_core.tools import BaseTool, tool
from langgraph.prebuilt import ToolRuntime
from langgraph.types import Command

from graph.context import Context
from retrieval.knowledge import KnowledgeBase
from retrieval.lookup import LookupConfig
from retrieval.memory import SessionMemory
from retrieval.relevance import Thresholds

SCRATCH = "scratch"

DESCRIPTION = (
    "Search the SRE knowledge base (runbooks) for a question or keywords. Returns found, primary "
    "content with its source file, supplements, relevanceLevel (PRECISE / HIGHLY_RELEVANT / "
    "REFERENCE / NONE), completenessHint, retrievedDomainsThisSession and a message. Documents "
    "already returned in this session are not returned again."
)


def run_config(base: LookupConfig, ctx: Context | None) -> LookupConfig:
    """Apply a run's Context overrides (budget, thresholds) to the service's configuration."""
    if ctx is None:
        return base
    t = base.thresholds
    thresholds = Thresholds(
        max_l2_distance=ctx.max_l2_distance if ctx.max_l2_distance > 0 else t.max_l2_distance,
        highly_relevant=ctx.highly_relevant_threshold
        if ctx.highly_relevant_threshold >= 0
        else t.highly_relevant,
        reference=ctx.reference_threshold if ctx.reference_threshold >= 0 else t.reference,
    )
    budget = ctx.lookup_budget if ctx.lookup_budget > 0 else base.budget
    return LookupConfig(**{**base.__dict__, "thresholds": thresholds, "budget": budget})


def tool_message(
    content: Any, runtime: ToolRuntime, name: str, artifact: Any = None
) -> ToolMessage:
    text = content if isinstance(content, str) else json.dumps(content, ensure_ascii=False)
    return ToolMessage(
        content=text, tool_call_id=runtime.tool_call_id or "", name=name, artifact=artifact
    )


def make_lookup_tool(kb: KnowledgeBase) -> BaseTool:
    @tool("lookup_knowledge", description=DESCRIPTION)
    async def lookup_knowledge(query: str, runtime: ToolRuntime[Context, dict]) -> Command:
        state = runtime.state or {}
        before = int(state.get("lookup_count") or 0)
        memory = SessionMemory.of(state.get("retrieved"), before)
        ctx = runtime.context if isinstance(runtime.context, Context) else None
        config = run_config(kb.lookup_service.config, ctx)
        outcome = await kb.alookup(query, memory, config=config)
        msg = tool_message(outcome.payload, runtime, "lookup_knowledge", outcome.artifact)
        return Command(
            update={
                "retrieved": outcome.served,
                "lookup_count": outcome.memory.lookups - before,
                SCRATCH: [msg],
            }
        )

    return lookup_knowledge
