"""The AI-Ops alert-analysis report, built only from what the tools returned. Pure.

For each alert: the evidence with its time, the runbook's candidate causes, the one the evidence
supports and those it rules out (and why), the runbook's actions for that cause, a confidence.
Across alerts: a timeline, the causal chain when the evidence links them, the noise. Every claim
cites a ledger entry ``[E3]`` (a tool call or a runbook section); the ledger closes the report.
The report is in the alerts' language (or the operator's note's, when one was given).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from graph.diagnosis.analysis import AlertAnalysis, ReadRunbook, analyse
from graph.diagnosis.words import WORDS
from graph.evidence import Evidence
from graph.ledger import Entry, Ledger

CJK = re.compile(r"[\u4e00-\u9fff]")


def report_language(alerts: Sequence[dict[str, Any]], note: str = "") -> str:
    """zh or en: the operator's note when one was given, else the alerts' own texts."""
    text = note or " ".join(f"{a.get('summary', '')} {a.get('description', '')}" for a in alerts)
    if not text.strip():
        return "zh"
    cjk = len(CJK.findall(text))
    return "zh" if cjk >= max(2, len(re.findall(r"[A-Za-z]+", text)) // 8) else "en"


def _cite(entries: Sequence[Entry]) -> str:
    ids = list(dict.fromkeys(e.id for e in entries))
    return "".join(f"[{i}]" for i in ids)


def _alert_table(alerts: Sequence[AlertAnalysis], w: dict[str, str]) -> list[str]:
    if not alerts:
        return [w["no_alerts"]]
    out = [w["table_head"], "|---|---|---|---|---|---|---|"]
    for x in alerts:
        a = x.alert
        out.append(
            f"| {x.index} | {x.name} | {a.get('severity', '')} | {a.get('service', '')} | "
            f"{a.get('activeAt') or '-'} | {a.get('value', '-')} | {a.get('summary', '')} {x.ref.cite()} |"
        )
    return out


def _timeline(alerts: Sequence[AlertAnalysis], w: dict[str, str]) -> list[str]:
    rows: list[tuple[str, str]] = []
    for x in alerts:
        rows.append((x.ref.ts, f"{w['fired']} **{x.name}** {x.ref.cite()}"))
        for line, e in x.lines:
            if str(line.get("level", "")).upper() != "DEBUG":
                rows.append((e.ts, f"{e.source} {line.get('level', '')}: {e.text} {e.cite()}"))
    rows = sorted({r for r in rows if r[0]}, key=lambda r: r[0])
    return [f"- `{ts}` {text}" for ts, text in rows[:14]]


def _chain(alerts: Sequence[AlertAnalysis], w: dict[str, str]) -> list[str]:
    linked = [x for x in alerts if x.upstream]
    if not linked:
        return []
    names = {x.name: x for x in alerts}
    order: list[str] = []

    def visit(name: str) -> None:
        for up in names[name].upstream:
            if up not in order and up in names:
                visit(up)
        if name not in order:
            order.append(name)

    for x in sorted(linked, key=lambda x: x.ref.ts):
        visit(x.name)
    out = ["", w["chain_h"], "", " → ".join(f"**{n}**" for n in order), ""]
    for x in linked:
        for up, why, refs in x.links:
            out.append(w["link"].format(a=up, b=x.name, why=why) + f" {_cite(refs)}")
    return out


def _causes(x: AlertAnalysis, ledger: Ledger, w: dict[str, str], lang: str) -> list[str]:
    out = [
        f"- **{w['candidates']}**（{x.doc.path}）："
        if lang == "zh"
        else f"- **{w['candidates']}** ({x.doc.path}):"
    ]  # type: ignore[union-attr]
    top = x.top
    for shown, j in enumerate(x.ranked[:4]):
        if j is not top and not j.supported and shown >= 2:
            break
        src = x.runbook_ref(ledger, j.item)
        facts = w["and"].join(dict.fromkeys(f.says(lang) for f in j.facts)) or w["identifiers"]
        if j is top:
            tag = w["supported"].format(facts=facts)
        elif j.supported:
            tag = w["also"].format(facts=facts)
        else:
            tag = w["no_evidence"]
        out.append(f"  - {j.item.label} {src.cite()} — {tag} {_cite(j.refs[:4])}".rstrip())
    for j in x.excluded[:3]:
        src = x.runbook_ref(ledger, j.item)
        out.append(
            f"  - {j.item.label} {src.cite()} — {w['ruled_out']}{w['colon']}{j.ruled_out} {_cite(j.refs[:2])}"
        )
    return out


def _analysis(
    x: AlertAnalysis, ledger: Ledger, w: dict[str, str], lang: str, missing: list[str]
) -> list[str]:
    a = x.alert
    out = ["", w["analysis_h"].format(i=x.index, name=x.name), ""]
    out.append(
        f"- **{w['symptom']}**{w['colon']}{a.get('description') or a.get('summary', '')} {x.ref.cite()}"
    )
    if x.lines:
        out.append(f"- **{w['logs']}**{w['colon']}")
        out += [
            f"  - `{e.ts}` {line.get('level', '')} {e.text} {e.cite()}" for line, e in x.lines[-6:]
        ]
    else:
        missing.append(w["no_logs"].format(name=x.name, service=a.get("service", "")))
    missing += [w["failed"].format(name=x.name, tool=t, why=why) for t, why in x.failed]
    if x.noise:
        out.append(f"- **{w['verdict']}**{w['colon']}{w['noise'].format(why=x.noise)}")
        return out
    if x.doc is None:
        out.append(f"- **{w['verdict']}**{w['colon']}{w['no_runbook'].format(name=x.name)}")
        missing.append(w["no_runbook"].format(name=x.name))
        return out
    out += _causes(x, ledger, w, lang)
    top = x.top
    if top:
        src = x.runbook_ref(ledger, top.item)
        because = w["and"].join(dict.fromkeys(f.says(lang) for f in top.facts)) or w["identifiers"]
        out.append(
            f"- **{w['verdict']}**{w['colon']}"
            + w["cause"].format(cause=top.item.label, where=top.item.where, because=because)
            + f" {src.cite()}{_cite(top.refs[:4])}"
        )
        if x.upstream:
            out.append(
                f"- **{w['upstream_h']}**{w['colon']}"
                + w["upstream"].format(up=w["and"].join(x.upstream))
            )
    else:
        out.append(f"- **{w['verdict']}**{w['colon']}{w['undecided']}")
        missing.append(w["undecided_missing"].format(name=x.name))
    out.append(f"- **{w['confidence']}**{w['colon']}{w[x.confidence]}")
    return out


def _plan(
    x: AlertAnalysis, alerts: Sequence[AlertAnalysis], ledger: Ledger, w: dict[str, str]
) -> list[str]:
    out = ["", w["plan_h"].format(i=x.index, name=x.name), ""]
    if x.noise:
        return [*out, w["noise_plan"]]
    if x.doc is None:
        return [*out, w["no_plan"]]
    n = 0
    for up in x.upstream:
        if first := next((o for o in alerts if o.name == up), None):
            n += 1
            out.append(f"{n}. " + w["fix_upstream"].format(up=up, i=first.index))
    for step in x.steps:
        n += 1
        src = x.runbook_ref(ledger, step.item)
        lead = (
            w["verify"] if step.why == "verify" else w["after"] if step.why == "afterwards" else ""
        )
        out.append(f"{n}. {lead}{step.text} {src.cite()}")
        if step.code:
            out += ["", "   ```", *[f"   {c.strip()}" for c in step.code], "   ```", ""]
    if not n:
        out.append(w["no_steps"])
    return out


def _conclusion(alerts: Sequence[AlertAnalysis], w: dict[str, str], stop_reason: str | None) -> str:
    analysed = [x for x in alerts if x.analysed]
    text = w["summary"].format(
        n=len(alerts), a=len(analysed), r=sum(1 for x in analysed if x.doc is not None)
    )
    if stop_reason:
        text += " " + w["stopped"].format(why=stop_reason)
    roots = [x for x in analysed if not x.upstream and not x.noise and x.top]
    chained = [x for x in analysed if x.upstream]
    if chained and roots:
        text += " " + w["root_first"].format(root=roots[0].name)
    elif alerts:
        worst = next((x for x in alerts if not x.noise), alerts[0])
        text += " " + w["first"].format(sev=worst.alert.get("severity", ""), name=worst.name)
    noise = [x.name for x in alerts if x.noise]
    if noise:
        text += " " + w["noise_list"].format(names=w["and"].join(noise))
    return text


def build_report(
    alerts: Sequence[dict[str, Any]],
    evidence_by_alert: dict[str, list[Evidence]],
    *,
    stop_reason: str | None = None,
    note: str = "",
    alerts_call: str = "",
    read_runbook: ReadRunbook | None = None,
    lang: str | None = None,
) -> str:
    lang = lang or report_language(alerts, note)
    w = WORDS[lang]
    ledger = Ledger()
    analysed = analyse(
        alerts, evidence_by_alert, ledger, lang, alerts_call=alerts_call, read_runbook=read_runbook
    )
    out = [w["title"], "", w["alerts_h"], "", *_alert_table(analysed, w)]
    missing = [] if alerts else [w["none_listed"]]
    if timeline := _timeline(analysed, w):
        out += ["", w["timeline_h"], "", *timeline]
    out += _chain(analysed, w)
    for x in analysed:
        if not x.analysed:
            missing.append(w["not_analysed"].format(name=x.name, why=stop_reason or w["no_step"]))
            continue
        out += _analysis(x, ledger, w, lang, missing)
        out += _plan(x, analysed, ledger, w)
    out += ["", w["missing_h"], ""]
    out += [f"- {m}" for m in missing] if missing else [w["nothing_missing"]]
    out += ["", w["conclusion_h"], "", _conclusion(analysed, w, stop_reason)]
    out += ledger.markdown(lang)
    return "\n".join(out)
