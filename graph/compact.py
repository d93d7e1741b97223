"""The compact context a tool-calling model (executor, simple assistant) is sent. Pure.

Sending the whole scratchpad again on every call made a run's cost grow quadratically (issue 14:
the ISS-002 scenario spent 53k tokens on 21 calls). Each call now sees its task, one line per
earlier tool result (the findings distilled so far, capped) and the latest round of tool calls with
their results in full. The system prompt and the task come first and do not change between the
calls of one step, so a provider's prompt cache keeps hitting on that prefix; only the findings
and the latest round vary, at the end.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, SystemMessage

from graph.evidence import Evidence, collect

FINDINGS_HEADER = "## 已得到的发现（较早的工具结果摘要；完整内容已读过，不必重复检索）"
MAX_FINDINGS = 10  # lines kept; older ones are counted, not listed, so a call's size is bounded
LINE_CHARS = 160


def latest_round(messages: Sequence[AnyMessage]) -> int:
    """Index where the latest round (the last model message with tool calls) begins."""
    for i in range(len(messages) - 1, -1, -1):
        m = messages[i]
        if isinstance(m, AIMessage) and m.tool_calls:
            return i
    return len(messages)


def _args(ev: Evidence) -> str:
    return json.dumps(ev.args, ensure_ascii=False, separators=(",", ":"))


def finding(ev: Evidence) -> str:
    """One line saying what an earlier tool call returned (never its content in full)."""
    head = f"- {ev.tool} {_args(ev)} → "
    if not ev.ok:
        return (head + "失败：" + ev.text)[:LINE_CHARS]
    d = ev.data
    if ev.tool == "lookup_knowledge":
        parts: list[Any] = [d.get("relevanceLevel") or ("found" if d.get("found") else "未找到")]
        parts += ev.sources()[:3]
        if d.get("message"):
            parts.append(str(d["message"])[:60])
        return (head + "；".join(map(str, parts)))[:LINE_CHARS]
    if ev.tool == "query_prometheus_alerts" and "alerts" in d:
        names = [str(a.get("alertname", "")) for a in d.get("alerts", [])]
        return (head + f"{len(names)} 条告警：" + "、".join(names))[:LINE_CHARS]
    return (head + " ".join(ev.text.split()))[:LINE_CHARS]


def findings(messages: Sequence[AnyMessage]) -> str:
    """The findings block for the tool results in ``messages`` ('' when there are none)."""
    lines = [finding(ev) for ev in collect(messages)]
    if not lines:
        return ""
    skipped = len(lines) - MAX_FINDINGS
    if skipped > 0:
        lines = [f"- （更早的 {skipped} 条结果从略）", *lines[-MAX_FINDINGS:]]
    return FINDINGS_HEADER + "\n" + "\n".join(lines)


def task_only(text: str) -> str:
    """The task of a compact task message, without its findings block."""
    return text.split(FINDINGS_HEADER, 1)[0].rstrip()


def compact(
    system: str,
    task: str,
    exchange: Sequence[AnyMessage],
    history: Sequence[AnyMessage] = (),
) -> list[AnyMessage]:
    """``[system, *history, task + findings, latest round]`` for one model call.

    ``exchange`` is this task's tool-calling exchange so far (model messages and tool results);
    everything before its latest round is reduced to findings lines."""
    cut = latest_round(exchange)
    earlier, latest = exchange[:cut], exchange[cut:]
    block = findings(earlier)
    text = f"{task}\n\n{block}" if block else task
    return [SystemMessage(system), *history, HumanMessage(text), *latest]


__all__ = ["FINDINGS_HEADER", "compact", "findings", "task_only"]
