"""The offline assistant and firing alerts in a chat ("what is firing, what first?"): the alert to
look at first, its runbook lookup, and the alert list an earlier round returned — which the compact
context (``graph/compact.py``) keeps only as a findings line by the time the answer is written."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from langchain_core.messages import AnyMessage

from graph.compact import FINDINGS_HEADER
from graph.evidence import Evidence, alert_input, alerts

SEVERITY_ORDER = {"critical": 0, "error": 1, "warning": 2, "info": 3}
_ALERTS_FINDING = re.compile(r"^- query_prometheus_alerts .*?→ \d+ 条告警：(.+)$", re.M)


def first_alert(evs: Sequence[Evidence]) -> dict[str, Any] | None:
    """The alert to look at first: the most severe, the earliest listed among equals."""
    listed = [a for a in alerts(evs) if a.get("alertname")]
    return min(
        listed,
        key=lambda a: SEVERITY_ORDER.get(str(a.get("severity", "")).lower(), 9),
        default=None,
    )


def alert_lookup(a: dict[str, Any]) -> dict[str, Any]:
    """``lookup_knowledge``'s arguments for one listed alert: its name and summary as the query,
    the alert itself as structured input."""
    alert = alert_input(a)
    if a.get("severity"):
        alert["labels"].setdefault("severity", str(a["severity"]))
    query = " ".join(x for x in (a["alertname"], alert["annotations"].get("summary", "")) if x)
    return {"query": query, "alert": alert}


def earlier_alerts(messages: Sequence[AnyMessage]) -> list[str]:
    """Alert names an earlier round listed, read from the task's findings block."""
    for m in reversed(messages):
        if m.type != "human":
            continue
        text = m.content if isinstance(m.content, str) else ""
        if FINDINGS_HEADER not in text:
            return []
        found = _ALERTS_FINDING.findall(text.split(FINDINGS_HEADER, 1)[1])
        return [n.strip() for n in found[-1].split("、") if n.strip()] if found else []
    return []


def alerts_part(names: list[str], evs: Sequence[Evidence]) -> str:
    """The alert list again, and which one the answer's runbook is for."""
    looked = next((e.args["alert"] for e in evs if isinstance(e.args.get("alert"), dict)), None)
    lines = ["**活跃告警**", *(f"- {n}" for n in names)]
    if looked:
        severity = (looked.get("labels") or {}).get("severity", "")
        why = f"（{severity}，最严重）" if severity else ""
        lines += ["", f"先看 {looked['alertname']}{why}：它的处理手册如下。"]
    return "\n".join(lines)
