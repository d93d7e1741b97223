"""The one state schema both graphs share.

``messages`` is the conversation (one HumanMessage and one final AIMessage per run) and survives
across runs on a thread. Everything else is per run: the run's input resets it (``None`` means
"reset" for the reducers below), so the retrieval memory starts empty at each run while staying
checkpointed — and so shared by every worker — during it.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, TypedDict

from langchain_core.messages import AnyMessage, HumanMessage
from langgraph.graph.message import add_messages

from retrieval.memory import merge_retrieved

Flow = Literal["CHAT", "AI_OPS"]


def retrieved_reducer(
    left: dict[str, list[str]] | None, right: dict[str, list[str]] | None
) -> dict[str, list[str]]:
    """Union of domain → paths (first-retrieved order); ``None`` resets to empty."""
    if right is None:
        return {}
    return merge_retrieved(left, right)


def count_reducer(left: int | None, right: int | None) -> int:
    """Sum of increments; ``None`` resets to 0 (parallel tool calls each add 1)."""
    if right is None:
        return 0
    return (left or 0) + right


def list_reducer(left: list[Any] | None, right: list[Any] | None) -> list[Any]:
    """Append; ``None`` resets to empty."""
    if right is None:
        return []
    return [*(left or []), *right]


def scratch_reducer(left: list[AnyMessage] | None, right: Any) -> list[AnyMessage]:
    """The run's working messages (tool calls and results); ``None`` resets."""
    if right is None:
        return []
    return add_messages(left or [], right)


class AgentState(TypedDict, total=False):
    messages: Annotated[list[AnyMessage], add_messages]
    session_id: str
    flow: Flow
    question: str
    route: Literal["simple", "complex"] | None
    # The run's tool-calling exchange (executor / assistant), kept out of the conversation.
    scratch: Annotated[list[AnyMessage], scratch_reducer]
    plan: dict[str, Any] | None  # the planner's latest step: instruction, domains, finish
    executor_feedback: Annotated[list[str], list_reducer]
    retrieved: Annotated[dict[str, list[str]], retrieved_reducer]
    lookup_count: Annotated[int, count_reducer]
    supervisor_turns: Annotated[int, count_reducer]
    planner_turns: Annotated[int, count_reducer]
    executor_steps: Annotated[int, count_reducer]
    stop_reason: str | None  # set when a hard limit ended the run
    next: str | None  # the supervisor's routing decision
    answer: str | None


def new_run_input(question: str, session_id: str, flow: Flow = "CHAT") -> dict[str, Any]:
    """Input for one run on a thread: the question plus a reset of every per-run field."""
    return {
        "messages": [HumanMessage(content=question)],
        "question": question,
        "session_id": session_id,
        "flow": flow,
        "route": None,
        "scratch": None,
        "plan": None,
        "executor_feedback": None,
        "retrieved": None,
        "lookup_count": None,
        "supervisor_turns": None,
        "planner_turns": None,
        "executor_steps": None,
        "stop_reason": None,
        "next": None,
        "answer": None,
    }
