"""What the final-answer call sees: distilled findings, not every excerpt. Pure.

Every tool result of a run used to go to the answer call whole — each lookup's primary excerpt and
all its supplements — so the prompt grew with the number of symptoms and with the base (6,913
tokens for the three-symptom question on the shipped base). The answer needs, per plan step (one
symptom or alert), what answers that step:

* a lookup judged PRECISE / HIGHLY_RELEVANT answers with its primary document: the supplements
  (other documents the search also ranked) are left out — the judge said no better one exists;
  a REFERENCE lookup keeps its first supplement, shortened; a supplement a later lookup
  points back to ("already returned", FS-3) is kept for that step; a lookup that found nothing
  keeps its message;
* a document another step already showed is named, not repeated;
* the excerpt keeps its paragraphs that share most with the step and the question, whole (a
  numbered list is one paragraph, so its steps stay together), in document order, within the
  step's share of the budget — never cut inside a sentence;
* alerts, logs and the time stay, logs to their last lines.

Items keep the shape the answer call always had (``tool``, ``args``, ``ok``, ``result``) plus the
``step`` they answer, so an answer model reads them the same way either side of this change.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from graph.evidence import Evidence
from retrieval.parsing.textmatch import bigrams, overlap
from telemetry.tokens import estimate_tokens

CONFIDENT = {"PRECISE", "HIGHLY_RELEVANT"}
LOG_LINES = 8
REFERENCE_SUPPLEMENTS = 1  # supplements a REFERENCE lookup keeps
SUPPLEMENT_SHARE = 0.2  # of a REFERENCE lookup's share, for each of them
MIN_SHARE = 250  # tokens: below this an excerpt says too little to answer from
_PARAGRAPHS = re.compile(r"\n\s*\n")
_FENCE = re.compile(r"^(```|~~~)", re.M)


def _paragraphs(text: str) -> list[str]:
    """Blank-line separated blocks; a fenced code block is never split."""
    out: list[str] = []
    for block in _PARAGRAPHS.split(text.strip()):
        if out and len(_FENCE.findall(out[-1])) % 2:  # inside an open fence: same block
            out[-1] = f"{out[-1]}\n\n{block}"
        elif block.strip():
            out.append(block.strip())
    return out


def distil(text: str, focus: str, budget: int) -> str:
    """The paragraphs of ``text`` that share most with ``focus``, whole and in document order,
    within ``budget`` tokens; the text itself when it fits. The first paragraph (the breadcrumb
    and opening of the best chunk) is always kept: it says what the excerpt is."""
    text = text.strip()
    if estimate_tokens(text) <= budget:
        return text
    paras = _paragraphs(text)
    grams = bigrams(focus)
    ranked = sorted(range(1, len(paras)), key=lambda i: (-overlap(paras[i], grams), i))
    keep, used = {0}, estimate_tokens(paras[0]) if paras else 0
    for i in ranked:
        cost = estimate_tokens(paras[i])
        if used + cost <= budget:
            keep.add(i)
            used += cost
    shown = [paras[i] for i in sorted(keep)]
    left = len(paras) - len(keep)
    tail = f"\n\n（另有 {left} 段与本步骤关系较小，未列出）" if left else ""
    return "\n\n".join(shown) + tail


_TITLE = re.compile(r"《([^》]+)》")


def _title(supplement: dict[str, Any]) -> str:
    return str(supplement.get("breadcrumb") or supplement.get("content", "")).split(" > ")[0]


def _repeated_titles(evidence: Sequence[Evidence]) -> set[str]:
    """Documents a lookup did not send again because an earlier one already had (FS-3): the
    answer needs them from where they first came, even as another lookup's supplement."""
    out: set[str] = set()
    for ev in evidence:
        if ev.tool == "lookup_knowledge" and ev.ok and not ev.data.get("primary"):
            out.update(t.strip() for t in _TITLE.findall(str(ev.data.get("message", ""))))
    return out


def _kept_supplements(ev: Evidence, repeated: set[str]) -> list[tuple[dict[str, Any], bool]]:
    """(supplement, answers another step): those a later lookup points back to, and for a
    lookup not judged confident its first ones as well (the right document may be one)."""
    sups = list(ev.data.get("supplement") or [])
    confident = ev.data.get("relevanceLevel") in CONFIDENT
    return [
        (x, _title(x) in repeated)
        for i, x in enumerate(sups)
        if _title(x) in repeated or (i < REFERENCE_SUPPLEMENTS and not confident)
    ]


def _lookup_result(
    ev: Evidence, focus: str, share: int, shown: set[str], repeated: set[str]
) -> dict[str, Any]:
    d = ev.data
    out: dict[str, Any] = {
        k: d[k] for k in ("found", "relevanceLevel", "completenessHint", "message") if d.get(k)
    }
    out.setdefault("found", bool(d.get("found")))
    primary = d.get("primary") or {}
    supplements = _kept_supplements(ev, repeated)
    extra = [x for x, other_step in supplements if not other_step]
    sup_share = int(share * SUPPLEMENT_SHARE)
    if primary:
        source = primary.get("source", "")
        entry = {"source": source, "matchType": primary.get("matchType", "")}
        if source in shown:
            entry["note"] = "同一文档已在前面的步骤中给出"
        else:
            left = share - sup_share * len(extra)
            entry["content"] = distil(primary.get("content", ""), focus, left)
            shown.add(source)
        out["primary"] = entry
    out["supplement"] = []
    for s, other_step in supplements:
        source = s.get("source", "")
        if source in shown:
            continue
        shown.add(source)
        out["supplement"].append(
            {
                "source": source,
                "breadcrumb": s.get("breadcrumb", ""),
                # A document another step needs gets a step's share; a REFERENCE extra, less.
                "content": distil(
                    s.get("content", ""), f"{_title(s)} {focus}", share if other_step else sup_share
                ),
            }
        )
    return out


def _other_result(ev: Evidence) -> Any:
    if not ev.ok:
        return ev.text[:300]
    if ev.tool == "query_logs" and isinstance(ev.data.get("lines"), list):
        return {**ev.data, "lines": ev.data["lines"][-LOG_LINES:]}
    return ev.data or ev.text[:600]


def _steps(evidence: Sequence[Evidence], feedback: Sequence[dict[str, Any]]) -> list[str]:
    """The plan step (its instruction) each piece of evidence answers; "" outside any step."""
    step_of = {c: f.get("instruction", "") for f in feedback for c in f.get("call_ids") or []}
    return [step_of.get(e.call_id, "") for e in evidence]


def answer_evidence(
    evidence: Sequence[Evidence],
    feedback: Sequence[dict[str, Any]],
    budget: int,
    question: str = "",
) -> list[dict[str, Any]]:
    """The run's evidence as the answer call sees it: one item per tool call, distilled, the
    lookups sharing what the other results leave of ``budget`` tokens."""
    steps = _steps(evidence, feedback)
    items: list[dict[str, Any]] = []
    lookups = []
    for ev, step in zip(evidence, steps, strict=True):
        item: dict[str, Any] = {"tool": ev.tool, "args": ev.args, "ok": ev.ok}
        if step:
            item["step"] = step
        if ev.tool == "lookup_knowledge" and ev.ok:
            lookups.append((len(items), ev, step))
        else:
            item["result"] = _other_result(ev)
        items.append(item)
    used = sum(estimate_tokens(str(i.get("result", ""))) + 20 for i in items)
    repeated = _repeated_titles(evidence)
    # One share per excerpt the answer needs: each primary, each supplement another step needs.
    units = sum(
        bool(ev.data.get("primary")) + sum(o for _, o in _kept_supplements(ev, repeated))
        for _, ev, _ in lookups
    )
    share = max(MIN_SHARE, (budget - used) // max(units, 1))
    shown: set[str] = set()
    for index, ev, step in lookups:
        focus = f"{step} {ev.args.get('query', '')} {question}"
        items[index]["result"] = _lookup_result(ev, focus, share, shown, repeated)
    return items


__all__ = ["answer_evidence", "distil"]
