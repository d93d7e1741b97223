"""Evidence score: a rule engine over a session's ``tool_invocation`` rows only. Pure.

no tool call → 0; FAILED session → 0; +30 any successful call; +35 any L0 hit, else +20 any L1 hit;
−10 per retrieval call that found nothing; −20 when every call failed; clamped to 0..100.

A lookup judged REFERENCE (a document from another topic or technology) is not a hit: it counts as
a miss and 5 points more, so an answer resting on an off-topic runbook never outscores an honest
"not found" from the same calls (issue 19).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

RETRIEVAL_TOOLS = {"lookup_knowledge"}


@dataclass(frozen=True)
class Call:
    tool_name: str
    success: bool
    l0_match_count: int | None = None
    l1_match_count: int | None = None
    dedup_reason: str | None = None
    relevance_level: str | None = None


OFF_TOPIC = "REFERENCE"


def _off_topic(c: Any) -> bool:
    return getattr(c, "relevance_level", None) == OFF_TOPIC


def evidence_score(session_status: str, calls: Sequence[Any]) -> dict[str, Any]:
    factors: list[dict[str, Any]] = []

    def factor(name: str, points: int) -> None:
        factors.append({"factor": name, "points": points})

    if session_status == "FAILED":
        factor("session failed", 0)
        return {"evidence_score": 0, "source": "rule", "factors": factors}
    if not calls:
        factor("no tool call", 0)
        return {"evidence_score": 0, "source": "rule", "factors": factors}
    score = 0
    ok = [c for c in calls if c.success]
    if ok:
        score += 30
        factor("successful tool call", 30)
    lookups = [c for c in ok if c.tool_name in RETRIEVAL_TOOLS]
    off_topic = [c for c in lookups if _off_topic(c)]
    lookups = [c for c in lookups if not _off_topic(c)]
    if any((c.l0_match_count or 0) > 0 for c in lookups):
        score += 35
        factor("L0 hit", 35)
    elif any((c.l1_match_count or 0) > 0 for c in lookups):
        score += 20
        factor("L1 hit", 20)
    # A refusal (budget) or a de-duplicated call searched nothing new; it is not a miss.
    misses = [
        c
        for c in lookups
        if not c.dedup_reason and not (c.l0_match_count or 0) and not (c.l1_match_count or 0)
    ]
    if misses:
        score -= 10 * len(misses)
        factor(f"retrieval with no hit ×{len(misses)}", -10 * len(misses))
    if off_topic:
        score -= 15 * len(off_topic)
        factor(f"only an off-topic (REFERENCE) document ×{len(off_topic)}", -15 * len(off_topic))
    if not ok:
        score -= 20
        factor("all tool calls failed", -20)
    return {"evidence_score": max(0, min(100, score)), "source": "rule", "factors": factors}
