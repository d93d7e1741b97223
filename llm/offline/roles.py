"""What the offline model does in each role. Deterministic: same messages in, same message out.

It plans from the knowledge map in the planner prompt, calls tools with terms taken from the task,
stops when a lookup says PRECISE / HIGHLY_RELEVANT or that the document/domain was already
retrieved, and answers extractively from tool results with their sources.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Sequence
from typing import Any

from langchain_core.messages import AIMessage, AnyMessage, SystemMessage

from graph.compact import task_only
from graph.evidence import Evidence, after_last_human, alerts, collect
from graph.extractive import Reader, extractive_answer
from graph.rules import aiops_step, alert_steps, next_agent
from llm.offline.alerts import alert_lookup, alerts_part, earlier_alerts, first_alert
from llm.offline.followup import earlier_questions, with_subject
from llm.offline.planning import plan_chat, plan_symptoms
from llm.offline.text import json_block, terms, unique

STOP_LEVELS = {"PRECISE", "HIGHLY_RELEVANT"}
WANTS_TIME = re.compile(r"几点|时间|日期|今天|现在|\bnow\b|\btime\b|\bdate\b|\btoday\b", re.I)
WANTS_ALERTS = re.compile(r"告警|报警|alert|firing", re.I)
WANTS_LOGS = re.compile(r"日志|\blogs?\b", re.I)
SERVICE_RE = re.compile(
    r"服务\s*[:：]?\s*([A-Za-z0-9_.\-]+)|service[=:\s]+([A-Za-z0-9_.\-]+)", re.I
)
DOMAIN_INSTR = re.compile(r"在领域\s*(\S+?)\s*检索\s*[:：]\s*(.+)")


def _id(*parts: Any) -> str:
    digest = hashlib.sha1(json.dumps(parts, ensure_ascii=False, default=str).encode()).hexdigest()
    return f"call_{digest[:24]}"


def _call(name: str, args: dict[str, Any], *salt: Any) -> dict[str, Any]:
    return {"name": name, "args": args, "id": _id(name, args, *salt), "type": "tool_call"}


def _text(m: AnyMessage) -> str:
    return m.content if isinstance(m.content, str) else json.dumps(m.content, ensure_ascii=False)


def _task(messages: Sequence[AnyMessage]) -> str:
    """The task of the last human message, without the findings a compact context adds."""
    for m in reversed(messages):
        if m.type == "human":
            return task_only(_text(m))
    return ""


def _strip_json(text: str) -> str:
    return re.sub(r"```json.*?```", "", text, flags=re.S).strip()


# --- acting roles: assistant and executor ---------------------------------------------------------


QUESTION_CHARS = 200  # longer is a paste (a log, a stack trace), not a question


def _query_for(task: str, spec: dict[str, Any]) -> str:
    if spec.get("query"):
        return str(spec["query"])
    text = _strip_json(task)
    if m := DOMAIN_INSTR.search(text):
        return m.group(2).strip()
    # A question goes as written (a hosted model passes it through nearly verbatim; keywords lost
    # one-character symptoms like 慢 / 卡 / 满); only pasted text is reduced to its terms.
    return text if len(text) <= QUESTION_CHARS else " ".join(terms(text)) or text


def _lookup_args(query: str, spec: dict[str, Any]) -> dict[str, Any]:
    """``lookup_knowledge``'s arguments: the query, and the alert a step analyses when it has one."""
    if isinstance(spec.get("firing_alert"), dict):
        return {"query": query, "alert": spec["firing_alert"]}
    return {"query": query}


def _service_for(task: str, spec: dict[str, Any]) -> str:
    if spec.get("service"):
        return str(spec["service"])
    m = SERVICE_RE.search(_strip_json(task))
    return (m.group(1) or m.group(2)) if m else ""


def _first_round(
    task: str, spec: dict[str, Any], tools: set[str], salt: str
) -> list[dict[str, Any]]:
    text = _strip_json(task)
    wanted = set(spec.get("tools") or [])
    calls = []
    if "query_prometheus_alerts" in tools and (
        "query_prometheus_alerts" in wanted or (not wanted and WANTS_ALERTS.search(text))
    ):
        calls.append(_call("query_prometheus_alerts", {"state": "firing"}, salt))
    if "get_current_time" in tools and (
        "get_current_time" in wanted or (not wanted and WANTS_TIME.search(text))
    ):
        calls.append(_call("get_current_time", {}, salt))
    only_meta = calls and len(terms(WANTS_TIME.sub("", WANTS_ALERTS.sub("", text)))) < 2
    if "lookup_knowledge" in tools and (
        "lookup_knowledge" in wanted or (not wanted and not only_meta)
    ):
        calls.append(_call("lookup_knowledge", _lookup_args(_query_for(task, spec), spec), salt))
    service = _service_for(task, spec)
    if (
        "query_logs" in tools
        and service
        and ("query_logs" in wanted or (not wanted and WANTS_LOGS.search(text)))
    ):
        calls.append(_call("query_logs", {"service": service, "minutes": 60}, salt))
    return calls


def _retry_query(first: str) -> str | None:
    """One different query after found=false: the English/code terms alone, or the Chinese alone."""
    ts = terms(first)
    ascii_terms = [t for t in ts if t.isascii()]
    cjk_terms = [t for t in ts if not t.isascii()]
    for alt in (" ".join(ascii_terms), " ".join(cjk_terms)):
        if alt and alt != first:
            return alt
    return None


METRIC_NAME = re.compile(r"\b[a-z][a-z0-9]*(?:_[a-z0-9]+)+\b")


def _alert_retry(spec: dict[str, Any], first: str) -> str | None:
    """For an alert a lookup found nothing for: its name with the metric names its description
    carries (``hikaricp_connections_pending``), which runbooks quote in their PromQL."""
    alert = spec.get("firing_alert")
    if not isinstance(alert, dict):
        return None
    notes = alert.get("annotations") or {}
    metrics = METRIC_NAME.findall(str(notes.get("description", "")))
    alt = " ".join(dict.fromkeys([str(alert.get("alertname", "")), *metrics])).strip()
    return alt if metrics and alt != first else None


def act(
    messages: Sequence[AnyMessage], tools: set[str], role: str, read: Reader | None = None
) -> AIMessage:
    asked = _task(messages)
    spec = json_block(asked) or {}
    # A follow-up ("可以直接重试吗？" about an error asked before) searches with the earlier subject.
    task = asked if spec else with_subject(asked, earlier_questions(messages))
    evs = collect(after_last_human(messages))
    salt = _id(role, task)
    if not evs:
        calls = _first_round(task, spec, tools, salt)
        if calls:
            return AIMessage(content="", tool_calls=calls)
    lookups = [e for e in evs if e.tool == "lookup_knowledge" and e.ok]
    alert_unread = not any(
        e.data.get("relevanceLevel") in STOP_LEVELS or e.args.get("alert") for e in lookups
    )
    if alert_unread and "lookup_knowledge" in tools and (top := first_alert(evs)):
        # "What is firing and what first?": the alerts alone name no step; the most severe
        # alert's runbook does (an SRE opens it next). A runbook found "for reference" for the
        # question as written (the HPA one for "which alert first?") does not name it either.
        return AIMessage(
            content="", tool_calls=[_call("lookup_knowledge", alert_lookup(top), salt, 2)]
        )
    if len(lookups) == 1 and "lookup_knowledge" in tools:
        last = lookups[0].data
        stop = (
            last.get("relevanceLevel") in STOP_LEVELS
            or "已返回过" in last.get("message", "")
            or "上限" in last.get("message", "")
        )
        if not last.get("found") and not stop:
            first = str(lookups[0].args.get("query", ""))
            alt = _alert_retry(spec, first) or _retry_query(first)
            if alt:
                return AIMessage(
                    content="",
                    tool_calls=[_call("lookup_knowledge", _lookup_args(alt, spec), salt, 2)],
                )
    question = spec.get("question") or _strip_json(asked)
    if task != asked and read is not None:  # a follow-up goes on from the runbook already cited
        evs = [*earlier_documents(messages, {x for e in evs for x in e.sources()}), *evs]
    text = extractive_answer(
        question, evs, report=(role == "executor"), focus=task if task != asked else "", read=read
    )
    if not alerts(evs) and (names := earlier_alerts(messages)):
        text = alerts_part(names, evs) + "\n\n" + text
    return AIMessage(content=text)


CITED = re.compile(r"^来源：(.+)$", re.M)


def earlier_documents(messages: Sequence[AnyMessage], have: set[str]) -> list[Evidence]:
    """The documents the conversation's last answer cited, as lookups already served: the
    session's lookups do not return a document twice, so a follow-up's own lookup finds the
    next-nearest one while the subject is still the runbook the answer came from."""
    answers = [_text(m) for m in messages[:-1] if isinstance(m, AIMessage) and not m.tool_calls]
    for text in reversed(answers):
        if m := CITED.search(text):
            paths = [p.strip() for p in m.group(1).split("、") if p.strip() not in have]
            return [
                Evidence(
                    "lookup_knowledge",
                    {"query": p},
                    "",
                    True,
                    "",
                    {
                        "found": True,
                        "relevanceLevel": "HIGHLY_RELEVANT",
                        "primary": {"source": p, "content": "（上一轮已引用）"},
                    },
                )
                for p in paths[:1]
            ]
    return []


# --- coordinating roles -----------------------------------------------------------------------


def supervise(messages: Sequence[AnyMessage]) -> AIMessage:
    state = json_block(_task(messages)) or {}
    if state.get("turns", 0) >= state.get("max_turns", 10**6):
        nxt, why = "finish", "达到调度轮次上限"
    else:
        nxt, why = next_agent(state.get("plan"))
    return AIMessage(content="", tool_calls=[_call("Route", {"next": nxt, "reason": why}, state)])


def _with_logs(steps: list[dict[str, Any]], question: str) -> list[dict[str, Any]]:
    """A question asking for a named service's logs gets them read once, in the first step (a
    step's instruction carries only its lookup, so the executor would not know the service)."""
    service = _service_for(question, {})
    if steps and service and WANTS_LOGS.search(question):
        steps[0] |= {"service": service, "tools": ["lookup_knowledge", "query_logs"]}
    return steps


def plan(messages: Sequence[AnyMessage]) -> AIMessage:
    """All the steps at once (one per alert or symptom), then finish: one planner call per run."""
    system = next((_text(m) for m in messages if isinstance(m, SystemMessage)), "")
    state = json_block(_task(messages)) or {}
    if state.get("flow") == "AI_OPS":
        checked = bool(state.get("alerts_checked"))
        steps = alert_steps(state) if checked else [aiops_step(state)]
        decided = {"steps": steps, "finish": checked}
    else:
        done = [f.get("instruction", "") for f in state.get("feedback", [])]
        steps = plan_symptoms(state.get("question", ""), system, done, state.get("symptoms"))
        if not steps:  # no clause names a runbook: the strongest domains for the whole question
            step = plan_chat(state.get("question", ""), system, state.get("done_domains", []))
            steps = [] if step["finish"] else [step]
        decided = {"steps": _with_logs(steps, state.get("question", "")), "finish": True}
    return AIMessage(content="", tool_calls=[_call("Plan", decided, state)])


# --- knowledge-base enrichment ------------------------------------------------------------------


def document_fields(messages: Sequence[AnyMessage]) -> AIMessage:
    doc = json_block(_task(messages)) or {}
    covers = unique([*doc.get("sections", [])[:6]]) or unique(doc.get("keywords", [])[:6])
    kws = "、".join(doc.get("keywords", [])[:4])
    when = f"当问题涉及「{doc.get('title', '')}」" + (f"，或提到 {kws} 时检索" if kws else "时检索")
    return AIMessage(
        content="",
        tool_calls=[_call("DocumentFields", {"covers": covers, "when_to_retrieve": when}, doc)],
    )


def domain_summary(messages: Sequence[AnyMessage]) -> AIMessage:
    data = json_block(_task(messages)) or {}
    docs = data.get("documents", [])
    titles = "".join(f"《{d.get('title', '')}》" for d in docs[:6])
    topics = "、".join(unique(c for d in docs for c in d.get("covers", []))[:8])
    text = f"领域 {data.get('domain', '')} 包含 {titles}" + (
        f"，问题涉及 {topics} 时检索本领域。" if topics else "。"
    )
    return AIMessage(
        content="", tool_calls=[_call("DomainSummary", {"when_to_retrieve": text}, data)]
    )


def respond(
    role: str, messages: Sequence[AnyMessage], tools: set[str], read: Reader | None = None
) -> AIMessage:
    if role in ("assistant", "executor"):
        return act(messages, tools, role, read)
    if role == "supervisor":
        return supervise(messages)
    if role == "planner":
        return plan(messages)
    if role == "answer":
        data = json_block(_task(messages)) or {}
        evs = [
            Evidence(
                e.get("tool", ""),
                e.get("args", {}),
                "",
                e.get("ok", True),
                "",
                e.get("result") or {},
            )
            for e in data.get("evidence", [])
        ]
        return AIMessage(content=extractive_answer(data.get("question", ""), evs, read=read))
    if role == "enricher":
        return document_fields(messages)
    if role == "domain_summary":
        return domain_summary(messages)
    raise ValueError(f"offline model has no role {role!r}")


__all__ = ["respond"]
