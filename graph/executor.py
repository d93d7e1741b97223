"""The executor: one plan step as a compiled subgraph with its own message channel.

The loop's ``executor`` node (``graph/loop.py``) hands it the step, its task message and the run's
lookup memory (``StepInput``). It runs executor model ⇄ tools in its own ``scratch``, which starts
empty, so everything in it is this step's; it ends in a ``StepReport`` (``StepOutput``), which the
parent adds to ``executor_feedback`` while the step's messages join the run's ``scratch``.

Its nodes keep the names the loop's nodes had (``executor``, ``executor_tools``, ``executor_done``):
a record names a model call by its node (``agent_step.agent_name``), a replay matches recorded calls
by it, and the trace shows it.
"""

from __future__ import annotations

import operator
from typing import Annotated, Any, Literal

from langchain_core.messages import AIMessage, AnyMessage, ToolMessage
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.prebuilt import ToolNode, tools_condition
from langgraph.runtime import Runtime
from typing_extensions import TypedDict  # pydantic builds schemas from it on Python 3.11

from graph.compact import compact
from graph.context import Context, run_context
from graph.deps import AgentDeps
from graph.evidence import collect
from graph.extractive import extractive_answer
from graph.rules import step_settled
from graph.state import SCRATCH, Flow, PlanStep, StepReport, StepStatus, message_channel
from retrieval.lookup.memory import merge_retrieved
from tools.errors import tool_error_text

LIMIT_NOTE = "\n\n（执行步数已达上限，本步结束）"

# The run's lookup memory, with the parent's reducers: the lookup tool reads it from the state it
# runs in and updates it through its Command (a document one step got is not sent again).
Retrieved = Annotated[dict[str, list[str]], merge_retrieved]
Lookups = Annotated[int, operator.add]
StepMessages = Annotated[list[AnyMessage], message_channel()]


class StepInput(TypedDict):
    step: PlanStep
    task: str  # the executor's task message: the instruction and the step's spec
    flow: Flow
    retrieved: Retrieved
    lookup_count: Lookups


class StepOutput(TypedDict):
    report: StepReport
    scratch: StepMessages  # the step's messages, in order
    retrieved: Retrieved
    lookup_count: Lookups  # the run's count after this step


class StepState(StepInput):
    scratch: StepMessages
    status: StepStatus  # set when the step ran out of executor steps
    report: StepReport


class Executor:
    def __init__(self, deps: AgentDeps) -> None:
        self.deps = deps

    async def executor(self, state: StepState, runtime: Runtime[Context]) -> dict[str, Any]:
        ctx = run_context(runtime)
        mine = state.get("scratch") or []
        if sum(1 for m in mine if isinstance(m, AIMessage)) >= ctx.max_executor_steps:
            note = extractive_answer(state["step"]["instruction"], collect(mine), report=True)
            return {
                "scratch": [AIMessage(content=note + LIMIT_NOTE)],
                "status": "max_executor_steps",
            }
        flow = "aiops" if state["flow"] == "AI_OPS" else "chat"
        system = ctx.executor_prompt or self.deps.prompts[f"{flow}_executor"]
        model = self.deps.models.for_role("executor", ctx).bind_tools(self.deps.tools)
        return {"scratch": [await model.ainvoke(compact(system, state["task"], mine))]}

    @staticmethod
    def after_tools(state: StepState) -> Literal["executor", "executor_done"]:
        """Back to the executor model, or — when the tools' results settle the step — straight
        to its report (``rules.step_settled``)."""
        step = state["step"]
        settled = step_settled(step["tools"], state["scratch"], alert_step=bool(step["alert"]))
        return "executor_done" if settled else "executor"

    @staticmethod
    async def executor_done(state: StepState) -> dict[str, Any]:
        step, mine = state["step"], state["scratch"]
        last = mine[-1] if mine else None
        text = last.content if isinstance(last, AIMessage) and isinstance(last.content, str) else ""
        report: StepReport = {
            "instruction": step["instruction"],
            "domains": step["domains"],
            "alert": step["alert"],
            # A step settled by its tool results has no closing model message: report the evidence.
            "report": text or extractive_answer(step["instruction"], collect(mine), report=True),
            "call_ids": [tc["id"] for m in mine if isinstance(m, AIMessage) for tc in m.tool_calls],
            "status": state.get("status") or ("reported" if text else "settled"),
        }
        return {"report": report}


# --- runs checkpointed before the executor was a subgraph ------------------------------------------

# The loop's nodes that ran a step's tools and report in the parent graph then. A run stopped in the
# middle of a step waits on one of them, or (between two model calls of a step) on ``executor``
# with the step's tool results not yet reported. It cannot go on from there: it says so, rather than
# finish with no answer (nothing would run) or redo the step on top of its first half.
OLD_STEP_NODES = ("executor_tools", "executor_done")
MID_STEP = (
    "this run stopped in the middle of a plan step under an earlier version of the agent (before "
    "the executor became a subgraph) and cannot continue from there; ask the question again"
)


class StoppedMidStep(RuntimeError):
    """A run checkpointed in the middle of a plan step by the earlier loop."""


def refuse_mid_step(scratch: list[AnyMessage], feedback: list[StepReport]) -> None:
    """Raises ``StoppedMidStep`` when the run's exchange ends in tool results no step report
    took: only the earlier loop left that (a step's messages now join the run with its report)."""
    last = scratch[-1] if scratch else None
    reported = {c for f in feedback for c in f.get("call_ids") or []}
    if isinstance(last, ToolMessage) and last.tool_call_id not in reported:
        raise StoppedMidStep(MID_STEP)


async def old_step_node(state: dict[str, Any]) -> dict[str, Any]:
    raise StoppedMidStep(MID_STEP)


def build_executor(deps: AgentDeps) -> CompiledStateGraph:
    """The executor subgraph. Compiled without a checkpointer of its own: inside a graph that has
    one it checkpoints under its parent's, so a resumed run resumes a step where it stopped."""
    ex = Executor(deps)
    g = StateGraph(
        StepState, context_schema=Context, input_schema=StepInput, output_schema=StepOutput
    )
    g.add_node("executor", ex.executor)
    g.add_node(
        "executor_tools",
        ToolNode(deps.tools, messages_key=SCRATCH, handle_tool_errors=tool_error_text),
    )
    g.add_node("executor_done", ex.executor_done)
    g.add_edge(START, "executor")
    g.add_conditional_edges(
        "executor",
        lambda s: tools_condition(s, messages_key=SCRATCH),
        {"tools": "executor_tools", "__end__": "executor_done"},
    )
    g.add_conditional_edges("executor_tools", ex.after_tools, ["executor", "executor_done"])
    g.add_edge("executor_done", END)
    return g.compile(name="executor")


__all__ = [
    "OLD_STEP_NODES",
    "Executor",
    "StepInput",
    "StepOutput",
    "StepState",
    "StoppedMidStep",
    "build_executor",
    "old_step_node",
    "refuse_mid_step",
]
