"""The analysis of every alert of an AI-Ops run: its evidence in the ledger, its facts, its runbook
judged against them, the plan, and across alerts the causal links and the noise. Pure.

``read_runbook`` gives a runbook's whole text by path (the lookup result is only an excerpt; the
cause and action sections may be outside it); without it the lookup's content is used.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from graph.diagnosis.facts import Facts, gather
from graph.diagnosis.judge import SUPPORTED, Judged, Step, causes, confidence, plan, ruled_out
from graph.diagnosis.lexicon import SINGLE_SCOPE_TERMS
from graph.diagnosis.runbook import Item, parse
from graph.evidence import Evidence
from graph.ledger import Entry, Ledger

STOP_LEVELS = {"PRECISE", "HIGHLY_RELEVANT"}
NON_PROD = re.compile(r"^(staging|stage|test|testing|dev|sandbox|qa|preview)\b", re.I)
SELF_HEALING = re.compile(
    r"scheduled for renewal|auto(matic(ally)?)? ?renew|将.*自动续期|自动", re.I
)

ReadRunbook = Callable[[str], str | None]


@dataclass
class Doc:
    path: str
    items: list[Item]
    call_id: str
    level: str


@dataclass
class AlertAnalysis:
    index: int
    alert: dict[str, Any]
    ref: Entry
    lines: list[tuple[dict[str, Any], Entry]] = field(default_factory=list)
    facts: Facts | None = None
    doc: Doc | None = None
    consulted: list[str] = field(default_factory=list)
    ranked: list[Judged] = field(default_factory=list)
    excluded: list[Judged] = field(default_factory=list)
    steps: list[Step] = field(default_factory=list)
    confidence: str = "low"
    upstream: list[str] = field(default_factory=list)  # alerts whose evidence explains this one
    links: list[tuple[str, str, list[Entry]]] = field(default_factory=list)  # (from, why, refs)
    noise: str = ""
    failed: list[tuple[str, str]] = field(default_factory=list)  # (tool, error)
    analysed: bool = True

    @property
    def name(self) -> str:
        return str(self.alert.get("alertname", ""))

    @property
    def top(self) -> Judged | None:
        return self.ranked[0] if self.ranked and self.ranked[0].supported else None

    def runbook_ref(self, ledger: Ledger, item: Item) -> Entry:
        assert self.doc is not None
        return ledger.add(
            "runbook",
            item.label,
            source=self.doc.path,
            section=item.where,
            call_id=self.doc.call_id,
            tool="lookup_knowledge",
            alert=self.name,
        )


def _alert_text(a: dict[str, Any]) -> str:
    return " ".join(str(a.get(k) or "") for k in ("summary", "description"))


def _docs(evs: Sequence[Evidence], read: ReadRunbook | None) -> list[Doc]:
    out: list[Doc] = []
    for ev in evs:
        if ev.tool != "lookup_knowledge" or not ev.ok or not ev.found:
            continue
        level = str(ev.data.get("relevanceLevel", ""))
        for src, content in ev.contents():
            if "," in src or any(d.path == src for d in out):
                continue
            text = (read(src) if read else None) or content
            out.append(Doc(src, parse(text), ev.call_id, level))
    return out


def _noise(a: AlertAnalysis, others: Sequence[AlertAnalysis]) -> str:
    """Why an alert is noise, or "": nothing erred for it, and it is outside production or
    settles itself, while other alerts carry the incident."""
    if a.facts is None or a.facts.errors or not any(o.facts and o.facts.errors for o in others):
        return ""
    labels = a.alert.get("labels") or {}
    env = next(
        (
            str(v)
            for k, v in labels.items()
            if k in ("namespace", "env", "environment") and NON_PROD.match(str(v))
        ),
        "",
    )
    heal = next((e for x, e in a.lines if SELF_HEALING.search(str(x.get("message", "")))), None)
    if not env and heal is None and not SELF_HEALING.search(_alert_text(a.alert)):
        return ""
    return (
        " ".join(p for p in (f"env={env}" if env else "", heal.id if heal else "") if p) or "self"
    )


def analyse(
    alerts: Sequence[dict[str, Any]],
    evidence_by_alert: dict[str, list[Evidence]],
    ledger: Ledger,
    lang: str,
    *,
    alerts_call: str = "",
    read_runbook: ReadRunbook | None = None,
) -> list[AlertAnalysis]:
    out: list[AlertAnalysis] = []
    for i, a in enumerate(alerts, 1):
        name = str(a.get("alertname", ""))
        value = f"value={a.get('value', '-')}; " if a.get("value") not in (None, "") else ""
        ref = ledger.add(
            "alert",
            f"{name} {a.get('severity', '')} {value}{_alert_text(a)}".strip(),
            call_id=alerts_call,
            tool="query_prometheus_alerts",
            source=str(a.get("service", "")),
            ts=str(a.get("activeAt") or ""),
            alert=name,
        )
        x = AlertAnalysis(i, a, ref)
        evs = evidence_by_alert.get(name)
        if evs is None:
            x.analysed = False
            out.append(x)
            continue
        for ev in evs:
            if ev.tool == "query_logs" and ev.ok:
                for line in ev.data.get("lines", []):
                    e = ledger.add(
                        "log",
                        str(line.get("message", "")),
                        call_id=ev.call_id,
                        tool="query_logs",
                        source=str(line.get("service", ev.args.get("service", ""))),
                        ts=str(line.get("ts", "")),
                        alert=name,
                    )
                    x.lines.append((line, e))
            elif not ev.ok:
                x.failed.append((ev.tool, ev.text[:120]))
        x.facts = gather(name, _alert_text(a), ref, x.lines, a.get("labels") or {})
        best: tuple[int, Doc, list[Judged]] | None = None
        for doc in _docs(evs, read_runbook):
            x.consulted.append(doc.path)
            ranked = causes(doc.items, [x.facts], lang)
            score = ranked[0].score if ranked and ranked[0].supported else 0
            if best is None or score > best[0]:
                best = (score, doc, ranked)
        if best and (best[0] >= SUPPORTED or best[1].level in STOP_LEVELS):
            x.doc, x.ranked = best[1], best[2]
        out.append(x)
    for x in out:
        x.noise = _noise(x, [o for o in out if o is not x])
    _link(out, lang)
    for x in out:
        if x.doc is None or x.noise:
            continue
        if x.top and x.facts:
            # upstream evidence counts for this runbook's actions only where it supports the cause
            named = {f.name for f in x.top.facts}
            upstream = [
                Facts(o.name, [f for f in o.facts.signals if f.name in named])
                for o in out
                if o.name in x.upstream and o.facts
            ]
            x.steps = plan(
                x.doc.items, x.top, [x.facts, *upstream], lang, consequence=bool(x.upstream)
            )
        x.excluded = ruled_out(x.doc.items, [x.facts], lang) if x.facts else []
        x.confidence = confidence(x.ranked)
    return out


def _mentions(x: AlertAnalysis, other: AlertAnalysis) -> list[Entry]:
    service = str(other.alert.get("service", ""))
    if len(service) < 3:
        return []
    return [e for line, e in x.lines if service in str(line.get("message", ""))]


def _can_explain(a: AlertAnalysis, b: AlertAnalysis) -> bool:
    """False when B's errors sit on one value (one channel) that A's evidence never names: a
    shared upstream such as A would fail every channel, not one."""
    assert b.facts is not None
    for f in b.facts.signals:
        if f.terms[: len(SINGLE_SCOPE_TERMS)] == SINGLE_SCOPE_TERMS:
            value = f.terms[-1]
            seen = [_alert_text(a.alert), *(str(x.get("message", "")) for x, _ in a.lines)]
            if not any(value in t for t in seen):
                return False
    return True


def _link(out: Sequence[AlertAnalysis], lang: str) -> None:
    """A → B when A fired no later than B and A's evidence explains B better than B's own does
    (B's runbook names what A shows), or B's logs call A's service."""
    for b in out:
        if b.doc is None or b.facts is None or b.noise:
            continue
        earlier = [
            a
            for a in out
            if a is not b
            and a.facts
            and not a.noise
            and str(a.alert.get("activeAt") or "") <= str(b.alert.get("activeAt") or "")
            and _can_explain(a, b)
        ]
        if not earlier:
            continue
        combined = causes(b.doc.items, [b.facts] + [a.facts for a in earlier if a.facts], lang)
        own = b.ranked[0].score if b.ranked else 0
        if combined and combined[0].supported and combined[0].cross and combined[0].score > own:
            b.ranked = combined
            for name in combined[0].cross:
                a = next(o for o in earlier if o.name == name)
                refs = [r for r in combined[0].refs if r.alert == name][:2]
                b.links.append((name, combined[0].item.label, refs))
                b.upstream.append(name)
        for a in earlier:
            if a.name not in b.upstream and (refs := _mentions(b, a)):
                b.links.append((a.name, str(a.alert.get("service", "")), refs[:1]))
                b.upstream.append(a.name)
