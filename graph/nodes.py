"""Graph nodes. Each node builds its messages, calls the model for its role and writes state.

Hard limits (supervisor turns, planner turns, executor steps per plan step) end a run cleanly: the
node stops asking the model and the run finishes with what was found. Where a model is wrong or
silent, the deterministic rules in ``rules.py`` and the extractive answer keep the run well-formed.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any, Literal

from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, SystemMessage
from langchain_core.runnables import RunnableConfig
from langgraph.runtime import Runtime
from langgraph.types import Command
from pydantic import BaseModel, Field

from graph.compact import compact
from graph.context import Context, run_context
from graph.deps import AgentDeps
from graph.evidence import alert_input, alerts, collect
from graph.executor import StepInput, StepOutput
from graph.extractive import extractive_answer
from graph.findings import answer_evidence
from graph.report import build_report
from graph.routing import classify, symptom_domains, symptoms
from graph.rules import Agent, aiops_step, next_agent
from graph.state import AgentState, Flow, PlanStep, asked_in_messages, run_start

HISTORY_MESSAGES = 6  # earlier conversation turns shown to the simple assistant


class Route(BaseModel):
    """Decide which agent acts next."""

    next: Literal["planner", "executor", "finish"] = Field(
        description="planner, executor or finish"
    )
    reason: str = Field(default="", description="one short sentence")


class Step(BaseModel):
    """One step for the executor: one distinct symptom or alert, looked up once."""

    instruction: str = Field(default="", description="one instruction for the executor")
    domains: list[str] = Field(
        default_factory=list, description="knowledge domains this step covers"
    )
    query: str = Field(default="", description="keywords for lookup_knowledge")
    service: str = Field(default="", description="service whose logs to query, if any")
    alert: str = Field(default="", description="alert this step analyses (AI-Ops)")
    tools: list[str] = Field(default_factory=list, description="tools this step needs")


class Plan(BaseModel):
    """The executor's next steps, one per distinct symptom or alert, or finish."""

    steps: list[Step] = Field(
        default_factory=list, description="steps in order; one per distinct symptom or alert"
    )
    finish: bool = Field(
        default=False,
        description="true when no step is needed after these (with no steps: finish now)",
    )


def _block(data: Any) -> str:
    return "```json\n" + json.dumps(data, ensure_ascii=False, indent=1, default=str) + "\n```"


def _firing_alert(state: AgentState, name: str) -> dict[str, Any] | None:
    """The listed alert a step analyses, in the shape ``lookup_knowledge`` takes as ``alert``."""
    for a in alerts(collect(state["scratch"])):
        if a.get("alertname") == name:
            return alert_input(a)
    return None


def _text(msg: AnyMessage | None) -> str:
    return msg.content if isinstance(msg, AIMessage) and isinstance(msg.content, str) else ""


def _map_focus(view: dict[str, Any]) -> list[str]:
    """What ranks the planner's map: the question's symptoms, or the alerts being analysed."""
    if view.get("alerts"):
        return [f"{a.get('alertname', '')} {a.get('summary', '')}".strip() for a in view["alerts"]]
    return view.get("symptoms") or [view["question"]]


def _flow(state: AgentState) -> str:
    return "aiops" if state["flow"] == "AI_OPS" else "chat"


def begin(
    flow: Flow, default_question: str = ""
) -> Callable[[AgentState, RunnableConfig], Awaitable[dict[str, Any]]]:
    """The first node of a graph: opens the run with its question and resets the per-run state."""

    async def begin(state: AgentState, config: RunnableConfig) -> dict[str, Any]:
        # A ``{"messages": [...]}`` input (Studio, LangGraph clients) asks in its last message.
        earlier = state.get("messages") or []
        asked = asked_in_messages(earlier)
        given = (state.get("note") if flow == "AI_OPS" else state.get("question")) or ""
        question = asked or given.strip() or default_question
        session_id = str((config.get("metadata") or {}).get("session_id") or "")
        return run_start(question, session_id, flow, in_messages=bool(asked), earlier=earlier)

    return begin


def plan_steps(decided: Plan) -> list[PlanStep]:
    """The planner's decision as state steps: the first is current, the rest are queued. A plan
    marked finish ends after its last step; with no steps it is the finish step itself."""
    if not decided.steps:
        done: PlanStep = {**Step().model_dump(), "finish": True, "executed": False}  # type: ignore[typeddict-item]
        return [done]
    last = len(decided.steps) - 1
    return [
        {
            **step.model_dump(),  # type: ignore[typeddict-item]
            "finish": False,
            "executed": False,
            "final": decided.finish and i == last,
        }
        for i, step in enumerate(decided.steps)
    ]


class Agents:
    """Node callables bound to what they need."""

    def __init__(self, deps: AgentDeps) -> None:
        self.deps = deps

    def _model(self, role: str, ctx: Context, tools: bool = False) -> Any:
        model = self.deps.models.for_role(role, ctx)
        return model.bind_tools(self.deps.tools) if tools else model

    async def _decide(
        self, role: str, ctx: Context, schema: type[BaseModel], system: str, view: Any
    ) -> Any:
        """One structured decision (forced tool call); ``None`` when the model gave none."""
        model = self._model(role, ctx).with_structured_output(
            schema, method="function_calling", include_raw=True
        )
        out = await model.ainvoke([SystemMessage(system), HumanMessage(_block(view))])
        return out["parsed"]

    def _prompt(self, name: str, override: str | None) -> str:
        return override or self.deps.prompts[name]

    # --- chat routing and the simple path -------------------------------------------------------

    async def classify(self, state: AgentState) -> Command[Literal["assistant", "supervisor"]]:
        q = state["question"]
        named = self.deps.named_domains(q)
        if len(named) >= 2:  # several domains: one symptom spanning them, or several symptoms?
            named = symptom_domains(q, self.deps.named_domains) or set(sorted(named)[:1])
        return Command(goto="assistant" if classify(q, named) == "simple" else "supervisor")

    async def assistant(self, state: AgentState, runtime: Runtime[Context]) -> dict[str, Any]:
        ctx = run_context(runtime)
        scratch = state["scratch"]
        if sum(1 for m in scratch if isinstance(m, AIMessage)) >= ctx.max_executor_steps:
            final = extractive_answer(state["question"], collect(scratch))
            return {"scratch": [AIMessage(content=final)], "stop_reason": "max_executor_steps"}
        history = state["messages"][-(HISTORY_MESSAGES + 1) : -1]
        messages = compact(
            self._prompt("chat_assistant", ctx.assistant_prompt),
            state["question"],
            scratch,
            history,
        )
        reply = await self._model("assistant", ctx, tools=True).ainvoke(messages)
        return {"scratch": [reply]}

    async def finish_simple(self, state: AgentState) -> dict[str, Any]:
        scratch = state["scratch"]
        answer = _text(scratch[-1] if scratch else None)
        if not answer.strip():
            answer = extractive_answer(state["question"], collect(scratch))
        return {"answer": answer, "messages": [AIMessage(content=answer)]}

    # --- supervisor / planner / executor loop ---------------------------------------------------

    async def supervise(
        self, state: AgentState, runtime: Runtime[Context]
    ) -> tuple[Agent, dict[str, Any]]:
        """Who acts next, and the state update; the graph turns ``finish`` into its ending.

        The default (``Context.supervisor = "rules"``) routes from the plan state with no model
        call: the supervisor's turn used to be a model call that mostly restated the plan."""
        ctx = run_context(runtime)
        if state["supervisor_turns"] >= ctx.max_supervisor_turns:
            return "finish", {"stop_reason": "max_supervisor_turns", "supervisor_turns": 1}
        nxt, _ = next_agent(state["plan"])
        if ctx.supervisor == "model":
            nxt = await self._model_route(state, ctx, nxt)
        if nxt == "planner" and state["planner_turns"] >= ctx.max_planner_turns:
            return "finish", {"stop_reason": "max_planner_turns", "supervisor_turns": 1}
        return nxt, {"supervisor_turns": 1}

    async def _model_route(self, state: AgentState, ctx: Context, rule: Agent) -> Agent:
        """The model supervisor's choice, kept well-formed: never execute a finished, executed or
        missing step (then the rule stands)."""
        plan = state["plan"]
        view = {
            "question": state["question"],
            "flow": state["flow"],
            "plan": plan,
            "feedback": [f["report"][:300] for f in state["executor_feedback"]],
            "turns": state["supervisor_turns"],
            "max_turns": ctx.max_supervisor_turns,
        }
        prompt = ctx.supervisor_prompt or self.deps.prompts[f"{_flow(state)}_supervisor"]
        decision = await self._decide("supervisor", ctx, Route, prompt, view)
        nxt: Agent = decision.next if decision else rule
        if nxt == "executor" and (not plan or plan["finish"] or plan["executed"]):
            nxt = rule
        return nxt

    def _planner_view(self, state: AgentState) -> dict[str, Any]:
        feedback = state["executor_feedback"]
        view: dict[str, Any] = {
            "question": state["question"],
            "flow": state["flow"],
            "done_domains": sorted({d for f in feedback for d in f["domains"]}),
            "feedback": [
                {"instruction": f["instruction"], "report": f["report"][:600]} for f in feedback
            ],
            "retrieved_domains": list(state["retrieved"]),
        }
        if state["flow"] != "AI_OPS":
            view["symptoms"] = symptoms(state["question"])  # one step each (chat_planner.md)
        if state["flow"] == "AI_OPS":
            evidence = collect(state["scratch"])
            view["alerts_checked"] = any(e.tool == "query_prometheus_alerts" for e in evidence)
            view["alerts"] = alerts(evidence)
            view["analyzed"] = [f["alert"] for f in feedback if f["alert"]]
        return view

    async def planner(self, state: AgentState, runtime: Runtime[Context]) -> dict[str, Any]:
        ctx = run_context(runtime)
        view = self._planner_view(state)
        if state["flow"] == "AI_OPS" and not view["alerts_checked"]:
            # An alert analysis always starts by listing the alerts: no model call to decide that.
            decided = Plan(steps=[Step.model_validate(aiops_step(view))])
        elif state["flow"] == "AI_OPS" and not view["alerts"]:
            decided = Plan(finish=True)  # nothing fires (or the listing failed): nothing to plan
        else:
            knowledge_map = await self.deps.knowledge_map(_map_focus(view), ctx.map_budget_tokens)
            system = self.deps.prompts.planner(state["flow"], knowledge_map, ctx.planner_prompt)
            # A model that answers in prose instead of a plan: finish rather than loop.
            decided = await self._decide("planner", ctx, Plan, system, view) or Plan(finish=True)
        steps = plan_steps(decided)
        return {"plan": steps[0], "plan_queue": steps[1:], "planner_turns": 1}

    def step_input(self, state: AgentState) -> StepInput:
        """What the executor subgraph gets for the current step: the step, its task message (the
        instruction, the step's spec and the question; an alert step also gets the alert as
        listed, in the shape ``lookup_knowledge`` takes) and the run's lookup memory."""
        plan = state["plan"]
        assert plan is not None, "the supervisor routes to the executor only with a plan step"
        spec: dict[str, Any] = {
            k: plan[k]  # type: ignore[literal-required]
            for k in ("instruction", "domains", "query", "service", "alert", "tools")
            if plan[k]  # type: ignore[literal-required]
        }
        spec["question"] = state["question"]
        if plan["alert"] and (firing := _firing_alert(state, plan["alert"])):
            spec["firing_alert"] = firing
        return {
            "step": plan,
            "task": f"{plan['instruction']}\n\n{_block(spec)}",
            "flow": state["flow"],
            "retrieved": state["retrieved"],
            "lookup_count": state["lookup_count"],
        }

    @staticmethod
    def after_step(state: AgentState, out: StepOutput) -> dict[str, Any]:
        """The parent's update from a step's outcome: its report and messages join the run, and
        the planner's next queued step (if any) becomes current."""
        plan = state["plan"]
        assert plan is not None, "a step ran, so there is a plan step"
        report = out["report"]
        update: dict[str, Any] = {
            "scratch": out["scratch"],
            "executor_feedback": [report],
            "retrieved": out["retrieved"],
            "lookup_count": out["lookup_count"] - state["lookup_count"],
        }
        if report["status"] == "max_executor_steps":
            update["stop_reason"] = "max_executor_steps"
        queue = state.get("plan_queue") or []
        if queue:
            return update | {"plan": queue[0], "plan_queue": queue[1:]}
        return update | {"plan": {**plan, "executed": True}}

    # --- endings --------------------------------------------------------------------------------

    async def answer(self, state: AgentState, runtime: Runtime[Context]) -> dict[str, Any]:
        ctx = run_context(runtime)
        evidence = collect(state["scratch"])
        # Distilled findings, one group per plan step, within a token budget (graph/findings.py).
        data = {
            "question": state["question"],
            "evidence": answer_evidence(
                evidence, state["executor_feedback"], ctx.answer_evidence_tokens, state["question"]
            ),
        }
        prompt = self._prompt("chat_answer", ctx.answer_prompt)
        reply = await self._model("answer", ctx).ainvoke(
            [SystemMessage(prompt), HumanMessage(_block(data))]
        )
        answer = _text(reply)
        if not answer.strip():
            answer = extractive_answer(state["question"], evidence)
        if state["stop_reason"]:
            answer += f"\n\n（本次运行因达到上限「{state['stop_reason']}」提前结束，以上基于已找到的内容。）"
        return {"answer": answer, "messages": [AIMessage(content=answer)]}

    async def report(self, state: AgentState) -> dict[str, Any]:
        evidence = collect(state["scratch"])
        by_id = {e.call_id: e for e in evidence}
        per_alert: dict[str, list[Any]] = {}
        for f in state["executor_feedback"]:
            if f["alert"]:
                per_alert.setdefault(f["alert"], []).extend(
                    by_id[c] for c in f["call_ids"] if c in by_id
                )
        from graph.aiops import AIOPS_TASK  # graph.aiops builds on this module

        listed = [e for e in evidence if e.tool == "query_prometheus_alerts" and e.ok]
        text = build_report(
            alerts(evidence),
            per_alert,
            stop_reason=state["stop_reason"],
            note="" if state["question"] == AIOPS_TASK else state["question"],
            alerts_call=listed[-1].call_id if listed else "",
            read_runbook=self.deps.read_runbook,
        )
        return {"answer": text, "messages": [AIMessage(content=text)]}


__all__ = ["Agents", "Plan", "Route", "Step", "begin", "plan_steps"]
