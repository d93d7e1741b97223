"""The one state schema both graphs share, their input schemas, and the per-run reset.

``messages`` is the conversation (one HumanMessage and one final AIMessage per run) and survives
across runs on a thread. Everything else is per run: the graph's first node (``begin``) writes every
per-run key — the reducer-backed ones through ``Overwrite`` — so the retrieval memory starts empty at
each run while staying checkpointed (and so shared by every worker) during it. After ``begin`` every
key exists, which is why they are all required here.
"""

from __future__ import annotations

import operator
import uuid
from typing import Annotated, Any, Literal, NotRequired

from langchain_core.messages import AnyMessage, HumanMessage, RemoveMessage
from langgraph.channels.delta import DeltaChannel
from langgraph.graph.message import _messages_delta_reducer
from langgraph.types import Overwrite
from pydantic import Field
from typing_extensions import TypedDict  # pydantic builds schemas from it on Python 3.11

from retrieval.lookup.memory import merge_retrieved

Flow = Literal["CHAT", "AI_OPS"]

# The key of a tool-calling exchange, kept out of the conversation: the run's (``AgentState``) and
# a plan step's own (``graph.executor.StepState``). The lookup tool writes its ToolMessage under
# this key wherever it runs, so the tools are built with it.
SCRATCH = "scratch"


class PlanStep(TypedDict):
    """The planner's latest step, as the executor and the supervisor read it."""

    instruction: str
    domains: list[str]
    query: str
    service: str
    alert: str
    tools: list[str]
    finish: bool
    executed: bool  # the executor has reported on this step
    final: NotRequired[bool]  # the planner's batch ends here: no planner turn after it


StepStatus = Literal["reported", "settled", "max_executor_steps"]


class StepReport(TypedDict):
    """What the executor subgraph (``graph/executor.py``) returns for one plan step."""

    instruction: str
    domains: list[str]
    alert: str
    report: str
    call_ids: list[str]  # the tool calls made for this step, to find their results in ``scratch``
    # How the step ended: the model wrote its report, the tool results settled it (the report is
    # taken from the evidence), or it ran out of executor steps (the run's ``stop_reason``).
    status: StepStatus


# Message lists are LangGraph DeltaChannels: a checkpoint stores only the messages its step added
# (plus a full snapshot every ``snapshot_frequency`` updates, which bounds how far a load replays),
# not the whole list again. With ``add_messages`` every checkpoint (≈8 per turn) carried the whole
# conversation, so a long conversation's storage grew with the square of its turns (issue 20:
# 400 turns, 14 MB → 1.7 GB). Threads stored before still load: a plain stored list is read as is.
def message_channel() -> DeltaChannel:
    return DeltaChannel(_messages_delta_reducer)


class AgentState(TypedDict):
    messages: Annotated[list[AnyMessage], message_channel()]
    # The run's recorded session (config metadata): no node reads it, the run's output does — a
    # Studio or LangGraph client finds the session's record by it.
    session_id: str
    flow: Flow
    question: str
    # The run's tool-calling exchange: the simple assistant's, or every plan step's in order (each
    # step's own messages are added when the executor subgraph returns).
    scratch: Annotated[list[AnyMessage], message_channel()]
    plan: PlanStep | None
    plan_queue: NotRequired[list[PlanStep]]  # the planner's further steps, taken in order
    executor_feedback: Annotated[list[StepReport], operator.add]
    # The lookup tool's action memory (tools.knowledge.LookupMemoryState): domain → paths in
    # first-returned order, and lookups served (parallel tool calls each add 1).
    retrieved: Annotated[dict[str, list[str]], merge_retrieved]
    lookup_count: Annotated[int, operator.add]
    supervisor_turns: Annotated[int, operator.add]
    planner_turns: Annotated[int, operator.add]
    stop_reason: str | None  # set when a hard limit ended the run
    answer: str | None
    note: NotRequired[str | None]  # the AI-Ops input, consumed by ``begin``


# Studio's chat panel and LangGraph clients send ``{"messages": [...]}``; our forms send a question
# or a note. Either alone starts a run: ``begin`` takes the question from the last human message
# when no question (note) is given.
InputMessages = NotRequired[
    Annotated[
        list[AnyMessage],
        Field(description="Or: the conversation; the last human message is the question."),
        message_channel(),  # the same channel as the state's (LangGraph requires one kind)
    ]
]


class ChatInput(TypedDict):
    """What a chat run needs (Studio renders it as the input form): a question, or messages."""

    question: NotRequired[Annotated[str, Field(description="The question, in Chinese or English.")]]
    messages: InputMessages


class AiOpsInput(TypedDict):
    """An alert analysis needs no input; an operator may word the task (note or messages)."""

    note: NotRequired[
        Annotated[
            str,
            Field(
                description="Optional: the task in your words; unset = analyse every active alert."
            ),
        ]
    ]
    messages: InputMessages


def run_input(question: str, flow: Flow = "CHAT") -> ChatInput | AiOpsInput:
    """The graph input for one new run of ``flow``."""
    return {"note": question} if flow == "AI_OPS" else {"question": question}


def message_text(message: AnyMessage) -> str:
    """The text of a message whose content is a string or a list of content blocks (Studio)."""
    content = message.content
    if isinstance(content, str):
        return content
    return " ".join(
        b if isinstance(b, str) else str(b.get("text", ""))
        for b in content
        if isinstance(b, str) or b.get("type") == "text"
    )


ASKED_ID = "asked-"  # id prefix of the human message ``run_start`` adds for a question input


def asked_in_messages(messages: list[AnyMessage]) -> str:
    """The question a ``{"messages": [...]}`` input asks: a trailing human message that the
    input brought (not one ``run_start`` added, left behind by a run that failed)."""
    last = messages[-1] if messages else None
    if last is None or last.type != "human" or str(last.id or "").startswith(ASKED_ID):
        return ""
    return message_text(last).strip()


# The messages a thread keeps in its state (≈50 turns). The models are sent far fewer (the
# assistant the last HISTORY_MESSAGES, a follow-up the latest subject); every earlier question and
# answer stays in the records (``diagnosis_session`` by thread). Bounding the list bounds what a
# delta channel's periodic snapshot stores, so a turn stores as much at turn 4,000 as at turn 10.
CONVERSATION_WINDOW = 100


def beyond_window(messages: list[AnyMessage], adding: int) -> list[RemoveMessage]:
    """Removals of the oldest messages, so the conversation keeps CONVERSATION_WINDOW of them once
    ``adding`` more are in (messages without an id cannot be named, and stay)."""
    excess = len(messages) + adding - CONVERSATION_WINDOW
    return [RemoveMessage(id=m.id) for m in messages[: max(0, excess)] if m.id]


def run_start(
    question: str,
    session_id: str,
    flow: Flow,
    *,
    in_messages: bool = False,
    earlier: list[AnyMessage] | None = None,
) -> dict[str, Any]:
    """The state update that opens a run on a thread: the question, and every per-run key reset.

    ``in_messages``: the question already is the conversation's last message (a messages input).
    ``earlier``: the conversation so far; its oldest messages are dropped so that with this run's
    question and answer the window is full, not past it."""
    asked = (
        []
        if in_messages
        else [HumanMessage(content=question, id=f"{ASKED_ID}{session_id or uuid.uuid4().hex}")]
    )
    return {
        "note": None,
        "messages": beyond_window(earlier or [], len(asked) + 1) + asked,
        "question": question,
        "session_id": session_id,
        "flow": flow,
        "scratch": Overwrite([]),
        "plan": None,
        "plan_queue": [],
        "executor_feedback": Overwrite([]),
        "retrieved": Overwrite({}),
        "lookup_count": Overwrite(0),
        "supervisor_turns": Overwrite(0),
        "planner_turns": Overwrite(0),
        "stop_reason": None,
        "answer": None,
    }
