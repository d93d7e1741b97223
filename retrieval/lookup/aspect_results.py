"""Which documents a multi-symptom lookup shows, and its overall level. Pure.

The whole question and each of its aspects (``aspects.py``) were judged on their own. Shown:

* the primary — the whole question's best new document when it is found, else the most confident
  aspect's;
* then, for every other aspect, its best new document (each with its aspect and its own level),
  unless an earlier pick already shows it;
* then the whole question's next documents, as for a single question, up to ``top_k``.

The overall level is the lowest level among the aspects that found something — a question is only
as well answered as its weakest symptom — and at most REFERENCE when an aspect found nothing (the
completeness hint then asks for the missing dimension; the message names the aspect).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from retrieval.judging.judge import Judged
from retrieval.judging.relevance import RelevanceLevel

_ORDER = (
    RelevanceLevel.NONE,
    RelevanceLevel.REFERENCE,
    RelevanceLevel.HIGHLY_RELEVANT,
    RelevanceLevel.PRECISE,
)


@dataclass
class Pick:
    judged: Judged
    aspect: str | None = None  # the aspect this document answers (None: the whole question)


@dataclass
class AspectOutcome:
    shown: list[Pick]
    level: RelevanceLevel
    unanswered: list[str]  # aspects for which nothing was found


def lowest(levels: Sequence[RelevanceLevel]) -> RelevanceLevel:
    return min(levels, key=_ORDER.index) if levels else RelevanceLevel.NONE


def combine(
    whole: Sequence[Judged],
    aspects: Sequence[tuple[str, Sequence[Judged]]],
    *,
    is_new: Callable[[str], bool],
    top_k: int,
    floor: float,
) -> AspectOutcome:
    """``whole``: the whole question's judged documents (best first); ``aspects``: each aspect's
    text with its judged documents; ``is_new(path)``: not returned earlier in the session."""
    fresh = [j for j in whole if is_new(j.doc.path)]
    best = {text: next((j for j in js if is_new(j.doc.path)), None) for text, js in aspects}
    found = {text: j for text, j in best.items() if j is not None and j.found}
    unanswered = [text for text, _ in aspects if text not in found]
    shown: list[Pick] = []
    if fresh and fresh[0].found:
        own = next((t for t, j in found.items() if j.doc.path == fresh[0].doc.path), None)
        shown.append(Pick(fresh[0], own))
    elif found:
        text, j = max(found.items(), key=lambda kv: kv[1].confidence or 0.0)
        shown.append(Pick(j, text))
    if not shown:
        return AspectOutcome([], RelevanceLevel.NONE, unanswered)
    for text, j in found.items():
        if len(shown) >= top_k:
            break
        if all(p.judged.doc.path != j.doc.path for p in shown):
            shown.append(Pick(j, text))
    for j in fresh[1:]:
        if len(shown) >= top_k:
            break
        if (j.confidence or 0.0) >= floor and all(p.judged.doc.path != j.doc.path for p in shown):
            shown.append(Pick(j))
    levels = [j.level for j in found.values()] or [shown[0].judged.level]
    level = lowest(levels)
    if unanswered:
        level = lowest([level, RelevanceLevel.REFERENCE])
    return AspectOutcome(shown, level, unanswered)


def aspect_fields(pick: Pick) -> dict[str, Any]:
    """A multi-symptom lookup's per-document fields: the aspect it answers and its own level."""
    return {"aspect": pick.aspect, "relevanceLevel": pick.judged.level.value}


def aspects_message(
    picks: Sequence[Pick], unanswered: Sequence[str], title: Callable[[str], str]
) -> str:
    """What the message adds for a multi-symptom lookup: each aspect's document and level, and the
    aspects nothing was found for."""
    covered = "；".join(
        f"「{p.aspect}」→《{title(p.judged.doc.path)}》（{p.judged.level.value}）"
        for p in picks
        if p.aspect
    )
    msg = f"问题含多个现象，已分别检索：{covered}。" if covered else ""
    if unanswered:
        msg += "未找到相关文档的现象：" + "；".join(f"「{a}」" for a in unanswered) + "。"
    return msg
