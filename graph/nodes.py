"""Graph nodes. Each node builds its messages, calls the model for its role and writes state.

Hard limits (supervisor turns, planner turns, executor steps per plan step) end a run cleanly: the
node stops asking the model and the run finishes with what was found.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Literal

from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
from langgraph.runtime import Runtime
from pydantic import BaseModel, Field

from graph.context import Context
from graph.evidence import alerts, collect
from graph.offline.roles import compose, plan_aiops, supervise
from graph.report import build_report
from graph.routing import classify
from graph.state import AgentState

if TYPE_CHECKING:
    from services import Services

HISTORY_MESSAGES = 6  # earlier conversation turns shown to the simple assistant
EVIDENCE_CHARS = 1500  # per tool result in the final-answer prompt


class Route(BaseModel):
    """Decide which agent acts next."""

    next: Literal["planner", "executor", "finish"] = Field(
        description="planner, executor or finish"
    )
    reason: str = Field(default="", description="one short sentence")


class Plan(BaseModel):
    """The next step for the executor, or finish."""

    instruction: str = Field(default="", description="one instruction for the executor")
    domains: list[str] = Field(
        default_factory=list, description="knowledge domains this step covers"
    )
    query: str = Field(default="", description="keywords for lookup_knowledge")
    service: str = Field(default="", description="service whose logs to query, if any")
    alert: str = Field(default="", description="alert this step analyses (AI-Ops)")
    tools: list[str] = Field(default_factory=list, description="tools this step needs")
    finish: bool = Field(default=False, description="true when no further step is needed")


def _block(data: dict[str, Any]) -> str:
    return "```json\n" + json.dumps(data, ensure_ascii=False, indent=1, default=str) + "\n```"


def _ctx(runtime: Runtime[Context] | None) -> Context:
    ctx = getattr(runtime, "context", None)
    if isinstance(ctx, Context):
        return ctx
    return Context.from_mapping(ctx if isinstance(ctx, dict) else None)


def _first_call(msg: AIMessage, schema: type[BaseModel]) -> BaseModel | None:
    for tc in getattr(msg, "tool_calls", None) or []:
        try:
            return schema.model_validate(tc.get("args") or {})
        except ValueError:
            return None
    return None


def _step_messages(state: AgentState) -> list[Any]:
    return list(state.get("scratch") or [])[int((state.get("plan") or {}).get("step_start", 0)) :]


class Agents:
    """Node callables bound to the running services."""

    def __init__(self, services: Services) -> None:
        self.s = services
        self.tool_names = {t.name for t in services.tools}

    def _model(self, role: str, ctx: Context, tools: bool = False) -> Any:
        model = self.s.models.for_role(role, ctx)
        return model.bind_tools(self.s.tools) if tools else model

    def _prompt(self, name: str, override: str) -> str:
        return override or self.s.prompts[name]

    # --- chat routing and the simple path -------------------------------------------------------

    async def classify(self, state: AgentState) -> dict[str, Any]:
        matches = self.s.kb.catalog.l0.search(state.get("question", ""))
        return {"route": classify(state.get("question", ""), {m.entry.category for m in matches})}

    async def assistant(self, state: AgentState, runtime: Runtime[Context]) -> dict[str, Any]:
        ctx = _ctx(runtime)
        steps = sum(1 for m in state.get("scratch") or [] if isinstance(m, AIMessage))
        if steps >= ctx.max_executor_steps:
            final = compose(state.get("question", ""), collect(state.get("scratch") or []))
            return {"scratch": [AIMessage(content=final)], "stop_reason": "max_executor_steps"}
        history = list(state.get("messages") or [])[-(HISTORY_MESSAGES + 1) :]
        messages = [
            SystemMessage(self._prompt("chat_assistant", ctx.assistant_prompt)),
            *history,
            *(state.get("scratch") or []),
        ]
        reply = await self._model("assistant", ctx, tools=True).ainvoke(messages)
        return {"scratch": [reply], "executor_steps": 1}

    async def finish_simple(self, state: AgentState) -> dict[str, Any]:
        scratch = state.get("scratch") or []
        last = scratch[-1] if scratch else None
        answer = (
            last.content if isinstance(last, AIMessage) and isinstance(last.content, str) else ""
        )
        if not answer.strip():
            answer = compose(state.get("question", ""), collect(scratch))
        return {"answer": answer, "messages": [AIMessage(content=answer)]}

    # --- supervisor / planner / executor loop ---------------------------------------------------

    def _flow(self, state: AgentState) -> str:
        return "aiops" if state.get("flow") == "AI_OPS" else "chat"

    async def supervisor(self, state: AgentState, runtime: Runtime[Context]) -> dict[str, Any]:
        ctx = _ctx(runtime)
        turns = int(state.get("supervisor_turns") or 0)
        plan = state.get("plan")
        view = {
            "question": state.get("question"),
            "flow": state.get("flow"),
            "plan": plan,
            "feedback": [f.get("report", "")[:300] for f in state.get("executor_feedback") or []],
            "turns": turns,
            "max_turns": ctx.max_supervisor_turns,
        }
        if turns >= ctx.max_supervisor_turns:
            return {"next": "finish", "stop_reason": "max_supervisor_turns", "supervisor_turns": 1}
        prompt = self.s.prompts[f"{self._flow(state)}_supervisor"]
        if ctx.supervisor_prompt:
            prompt = ctx.supervisor_prompt
        model = self._model("supervisor", ctx).bind_tools([Route], tool_choice="Route")
        reply = await model.ainvoke([SystemMessage(prompt), HumanMessage(_block(view))])
        decision = _first_call(reply, Route)
        fallback = _first_call(supervise([HumanMessage(_block(view))]), Route)
        nxt = decision.next if decision else fallback.next  # type: ignore[union-attr]
        # Keep the loop well-formed whatever the model says.
        if nxt == "executor" and (not plan or plan.get("finish") or plan.get("executed")):
            nxt = fallback.next  # type: ignore[union-attr]
        if nxt == "planner" and int(state.get("planner_turns") or 0) >= ctx.max_planner_turns:
            return {"next": "finish", "stop_reason": "max_planner_turns", "supervisor_turns": 1}
        return {"next": nxt, "supervisor_turns": 1}

    def _planner_view(self, state: AgentState) -> dict[str, Any]:
        feedback = state.get("executor_feedback") or []
        evidence = collect(state.get("scratch") or [])
        view: dict[str, Any] = {
            "question": state.get("question"),
            "flow": state.get("flow"),
            "done_domains": sorted({d for f in feedback for d in f.get("domains", [])}),
            "feedback": [
                {"instruction": f.get("instruction"), "report": f.get("report", "")[:600]}
                for f in feedback
            ],
            "retrieved_domains": list((state.get("retrieved") or {}).keys()),
        }
        if state.get("flow") == "AI_OPS":
            view["alerts_checked"] = any(e.tool == "query_prometheus_alerts" for e in evidence)
            view["alerts"] = alerts(evidence)
            view["analyzed"] = [f.get("alert") for f in feedback if f.get("alert")]
        return view

    async def planner(self, state: AgentState, runtime: Runtime[Context]) -> dict[str, Any]:
        ctx = _ctx(runtime)
        view = self._planner_view(state)
        knowledge_map = await self.s.domains.knowledge_map()
        system = self.s.prompts.planner(
            state.get("flow", "CHAT"), knowledge_map, ctx.planner_prompt
        )
        model = self._model("planner", ctx).bind_tools([Plan], tool_choice="Plan")
        reply = await model.ainvoke([SystemMessage(system), HumanMessage(_block(view))])
        step = _first_call(reply, Plan)
        if step is None:  # a model that answers in prose: finish rather than loop
            step = Plan(finish=True)
        if (
            state.get("flow") == "AI_OPS"
            and not step.finish
            and not view["alerts_checked"]
            and "query_prometheus_alerts" not in step.tools
        ):
            step = Plan.model_validate(plan_aiops(view))
        plan = step.model_dump() | {
            "executed": False,
            "step_start": len(state.get("scratch") or []),
        }
        return {"plan": plan, "planner_turns": 1}

    async def executor(self, state: AgentState, runtime: Runtime[Context]) -> dict[str, Any]:
        ctx = _ctx(runtime)
        plan = state.get("plan") or {}
        mine = _step_messages(state)
        if sum(1 for m in mine if isinstance(m, AIMessage)) >= ctx.max_executor_steps:
            note = (
                compose(plan.get("instruction", ""), collect(mine), report=True)
                + "\n\n（执行步数已达上限，本步结束）"
            )
            return {"scratch": [AIMessage(content=note)], "stop_reason": "max_executor_steps"}
        spec = {
            k: plan.get(k)
            for k in ("instruction", "domains", "query", "service", "alert", "tools")
            if plan.get(k)
        }
        spec["question"] = state.get("question")
        task = HumanMessage(f"{plan.get('instruction', '')}\n\n{_block(spec)}")
        system = self._prompt(f"{self._flow(state)}_executor", ctx.executor_prompt)
        reply = await self._model("executor", ctx, tools=True).ainvoke(
            [SystemMessage(system), task, *mine]
        )
        return {"scratch": [reply], "executor_steps": 1}

    async def executor_done(self, state: AgentState) -> dict[str, Any]:
        plan = dict(state.get("plan") or {})
        mine = _step_messages(state)
        last = mine[-1] if mine else None
        report = (
            last.content if isinstance(last, AIMessage) and isinstance(last.content, str) else ""
        )
        call_ids = [tc["id"] for m in mine if isinstance(m, AIMessage) for tc in m.tool_calls]
        feedback = {
            "instruction": plan.get("instruction", ""),
            "domains": plan.get("domains", []),
            "alert": plan.get("alert", ""),
            "report": report,
            "call_ids": call_ids,
        }
        plan["executed"] = True
        return {"plan": plan, "executor_feedback": [feedback]}

    # --- endings --------------------------------------------------------------------------------

    async def answer(self, state: AgentState, runtime: Runtime[Context]) -> dict[str, Any]:
        ctx = _ctx(runtime)
        evidence = collect(state.get("scratch") or [])
        data = {
            "question": state.get("question"),
            "evidence": [
                {
                    "tool": e.tool,
                    "args": e.args,
                    "ok": e.ok,
                    "result": e.data or e.text[:EVIDENCE_CHARS],
                }
                for e in evidence
            ],
        }
        prompt = self._prompt("chat_answer", ctx.answer_prompt)
        reply = await self._model("answer", ctx).ainvoke(
            [SystemMessage(prompt), HumanMessage(_block(data))]
        )
        answer = (
            reply.content
            if isinstance(reply.content, str) and reply.content.strip()
            else compose(state.get("question", ""), evidence)
        )
        if state.get("stop_reason"):
            answer += f"\n\n（本次运行因达到上限「{state['stop_reason']}」提前结束，以上基于已找到的内容。）"
        return {"answer": answer, "messages": [AIMessage(content=answer)]}

    async def report(self, state: AgentState) -> dict[str, Any]:
        scratch = state.get("scratch") or []
        evidence = collect(scratch)
        by_id = {e.call_id: e for e in evidence}
        per_alert: dict[str, list[Any]] = {}
        for f in state.get("executor_feedback") or []:
            if f.get("alert"):
                per_alert.setdefault(f["alert"], []).extend(
                    by_id[c] for c in f.get("call_ids", []) if c in by_id
                )
        text = build_report(alerts(evidence), per_alert, stop_reason=state.get("stop_reason"))
        return {"answer": text, "messages": [AIMessage(content=text)]}


__all__ = ["Agents", "Plan", "Route"]
