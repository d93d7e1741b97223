"""The evidence ledger of an AI-Ops report: every fact the report states, with its source. Pure.

Each entry is an alert as listed, a log line as returned, or a runbook section as read; each has a
tool call id (``query_prometheus_alerts`` / ``query_logs`` / ``lookup_knowledge``) or a runbook
path and section. The report cites entries as ``[E3]``; the ledger itself is rendered as the
report's last section (so it is stored with the session's answer) and as a JSON block the session
page opens entry by entry.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any

LEDGER_MARK = "superbiz-ledger"  # the info string of the JSON block the page reads


@dataclass
class Entry:
    id: str  # E1, E2, …
    kind: str  # alert / log / runbook
    text: str  # what the source says (an alert's values, a log line, a section's heading path)
    call_id: str = ""  # the tool call that returned it
    tool: str = ""
    source: str = ""  # a runbook path, or the service a log line came from
    section: str = ""  # a runbook section's heading path
    ts: str = ""
    alert: str = ""  # the alert the entry was gathered for

    def cite(self) -> str:
        return f"[{self.id}]"


@dataclass
class Ledger:
    entries: list[Entry] = field(default_factory=list)

    def add(self, kind: str, text: str, **where: Any) -> Entry:
        """The entry for this source, added once: the same log line cited twice is one entry."""
        key = (kind, text, where.get("source", ""), where.get("section", ""))
        for e in self.entries:
            if (e.kind, e.text, e.source, e.section) == key:
                return e
        entry = Entry(f"E{len(self.entries) + 1}", kind, text, **where)
        self.entries.append(entry)
        return entry

    def as_json(self) -> list[dict[str, Any]]:
        return [asdict(e) for e in self.entries]

    def markdown(self, lang: str) -> list[str]:
        """The ledger as the report's last section: a table, then the machine-readable block."""
        zh = lang == "zh"
        out = [
            "",
            "## 证据台账" if zh else "## Evidence ledger",
            "",
            "| # | 类型 | 来源 | 时间 | 内容 |" if zh else "| # | kind | source | time | content |",
            "|---|---|---|---|---|",
        ]
        for e in self.entries:
            src = e.source + (f" § {e.section}" if e.section else "")
            if e.call_id:
                src += f" ({e.tool} `{e.call_id}`)"
            text = e.text.replace("|", "\\|").replace("\n", " ")
            out.append(f"| {e.id} | {e.kind} | {src} | {e.ts or '-'} | {text} |")
        block = json.dumps(self.as_json(), ensure_ascii=False)
        return [*out, "", f"```{LEDGER_MARK}", block, "```"]


def parse_block(report: str) -> list[dict[str, Any]]:
    """The ledger entries stored in a report's text (``[]`` when it has none)."""
    start = report.rfind(f"```{LEDGER_MARK}\n")
    if start < 0:
        return []
    body = report[start + len(LEDGER_MARK) + 4 :]
    end = body.find("\n```")
    try:
        data = json.loads(body[: end if end >= 0 else None])
    except ValueError:
        return []
    return data if isinstance(data, list) else []
