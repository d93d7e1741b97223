"""What the tools returned in a run, read back from the messages. Pure.

Both the offline model and the report/answer nodes build on this, so an answer can only ever cite
what a tool actually returned.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from langchain_core.messages import AIMessage, AnyMessage, ToolMessage


@dataclass
class Evidence:
    tool: str
    args: dict[str, Any]
    call_id: str
    ok: bool
    text: str
    data: dict[str, Any] = field(default_factory=dict)

    @property
    def found(self) -> bool:
        return bool(self.data.get("found"))

    def sources(self) -> list[str]:
        if self.tool != "lookup_knowledge":
            return []
        out = []
        primary = self.data.get("primary") or {}
        for s in [
            primary.get("source", ""),
            *[x.get("source", "") for x in self.data.get("supplement", [])],
        ]:
            for part in s.split(","):
                if part.strip() and part.strip() not in out:
                    out.append(part.strip())
        return out

    def contents(self) -> list[tuple[str, str]]:
        """(source, text) pairs of a lookup's content, primary first."""
        if self.tool != "lookup_knowledge":
            return []
        out = []
        if p := self.data.get("primary"):
            out.append((p.get("source", ""), p.get("content", "")))
        out += [
            (s.get("source", ""), s.get("content", "")) for s in self.data.get("supplement", [])
        ]
        return out


def result_text(msg: ToolMessage) -> str:
    """A tool result's text, as the model read it."""
    return (
        msg.content if isinstance(msg.content, str) else json.dumps(msg.content, ensure_ascii=False)
    )


def result_data(msg: ToolMessage) -> dict[str, Any]:
    """The JSON object a tool returned (``{}`` for plain text, an error or a list).

    It is read from the content, not the ``artifact``: the content is what the model was shown
    (a lookup's documents, the alerts, the log lines), while a lookup's artifact is its scores
    record — it has the relevance level and the domains served, not the documents, their sources
    or the message — and the other tools return no artifact."""
    try:
        data = json.loads(result_text(msg))
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}


def collect(messages: Sequence[AnyMessage]) -> list[Evidence]:
    calls: dict[str, tuple[str, dict[str, Any]]] = {}
    out: list[Evidence] = []
    for m in messages:
        if isinstance(m, AIMessage):
            for tc in m.tool_calls:
                calls[tc["id"] or ""] = (tc["name"], tc.get("args") or {})
        elif isinstance(m, ToolMessage):
            name, args = calls.get(m.tool_call_id, (m.name or "", {}))
            ok = getattr(m, "status", "success") != "error"
            out.append(Evidence(name, args, m.tool_call_id, ok, result_text(m), result_data(m)))
    return out


def after_last_human(messages: Sequence[AnyMessage]) -> list[AnyMessage]:
    for i in range(len(messages) - 1, -1, -1):
        if messages[i].type == "human":
            return list(messages[i + 1 :])
    return list(messages)


def alerts(evidence: Sequence[Evidence]) -> list[dict[str, Any]]:
    for ev in reversed(evidence):
        if ev.tool == "query_prometheus_alerts" and ev.ok:
            return list(ev.data.get("alerts", []))
    return []


def alert_input(a: Mapping[str, Any]) -> dict[str, Any]:
    """A listed alert in the shape ``lookup_knowledge`` takes as ``alert``: its name, its labels
    and the annotations a lookup reads (summary, description)."""
    notes = {k: str(a[k]) for k in ("summary", "description") if a.get(k)}
    labels = {str(k): str(v) for k, v in (a.get("labels") or {}).items()}
    return {"alertname": a["alertname"], "labels": labels, "annotations": notes}


def all_sources(evidence: Sequence[Evidence]) -> list[str]:
    out: list[str] = []
    for ev in evidence:
        out += [s for s in ev.sources() if s not in out]
    return out
