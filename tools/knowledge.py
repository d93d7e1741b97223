"""``lookup_knowledge``: the hybrid knowledge-base lookup as a LangChain tool with action memory.

The session's memory is read from graph state (``retrieved``, ``lookup_count``) and updated through
the returned ``Command``; the model sees only the payload (no scores); raw scores travel as the
ToolMessage's ``artifact``. The tool knows nothing of the graph: the graph tells it where its
ToolMessages go (``messages_key``), and a run's knobs arrive as a ``LookupKnobs`` (the graphs'
``Context`` is one).
"""

from __future__ import annotations

import json
from typing import Any

from langchain_core.messages import ToolMessage
from langchain_core.tools import BaseTool, ToolException, tool
from langgraph.prebuilt import ToolRuntime
from langgraph.types import Command
from typing_extensions import TypedDict  # pydantic builds schemas from it on Python 3.11

from retrieval.knowledge import KnowledgeBase
from retrieval.lookup.alert_input import AlertError, AlertInput
from retrieval.lookup.knobs import LookupKnobs
from retrieval.lookup.knobs import apply as run_config  # a run's knobs over the configuration
from retrieval.lookup.memory import SessionMemory

DESCRIPTION = (
    "Search the SRE knowledge base (runbooks) for a question or keywords. Returns found, primary "
    "content with its source file, supplements, relevanceLevel (PRECISE / HIGHLY_RELEVANT / "
    "REFERENCE / NONE), completenessHint, retrievedDomainsThisSession and a message. Documents "
    "already returned in this session are not returned again. When analysing a firing alert, pass "
    "it as `alert` ({alertname, labels, annotations}): its name is matched exactly and its label "
    "values are read as context. A question with several symptoms is searched per symptom; each "
    "document then says which `aspect` it answers and its own relevanceLevel."
)


class AlertArg(TypedDict, total=False):
    """A firing alert: ``alertname`` (or ``labels.alertname``), ``labels``, ``annotations``."""

    alertname: str
    labels: dict[str, str]
    annotations: dict[str, str]


class LookupMemoryState(TypedDict, total=False):
    """The state keys the tool reads; its ``Command`` writes the same two plus the messages key."""

    retrieved: dict[str, list[str]]  # domain → paths already returned this run (union reducer)
    lookup_count: int  # lookups served this run (summing reducer)


def tool_message(
    content: Any, runtime: ToolRuntime, name: str, artifact: Any = None
) -> ToolMessage:
    text = content if isinstance(content, str) else json.dumps(content, ensure_ascii=False)
    return ToolMessage(
        content=text, tool_call_id=runtime.tool_call_id or "", name=name, artifact=artifact
    )


def make_lookup_tool(kb: KnowledgeBase, *, messages_key: str) -> BaseTool:
    @tool("lookup_knowledge", description=DESCRIPTION)
    async def lookup_knowledge(
        runtime: ToolRuntime[LookupKnobs, LookupMemoryState],
        query: str = "",
        alert: AlertArg | None = None,
    ) -> Command:
        try:
            parsed = AlertInput.parse(alert) if alert else None
        except AlertError as exc:  # the model reads the problem and can call again
            raise ToolException(str(exc)) from None
        if not query.strip() and parsed is None:
            raise ToolException("give a query (the question or keywords) or an alert to look up")
        state = runtime.state or {}
        before = int(state.get("lookup_count") or 0)
        memory = SessionMemory.of(state.get("retrieved"), before)
        knobs = runtime.context if isinstance(runtime.context, LookupKnobs) else None
        config = run_config(kb.lookup_service.config, knobs)
        outcome = await kb.alookup(query, memory, config=config, alert=parsed)
        msg = tool_message(outcome.payload, runtime, "lookup_knowledge", outcome.artifact)
        return Command(
            update={
                "retrieved": outcome.served,
                "lookup_count": outcome.memory.lookups - before,
                messages_key: [msg],
            }
        )

    return lookup_knowledge
