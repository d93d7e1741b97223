"""Question complexity: simple questions go to one ReAct assistant, complex ones to the
supervisor → planner → executor loop. Pure and explainable, so routing costs no model call."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Literal

Complexity = Literal["simple", "complex"]
_PARTS = re.compile(r"[？?；;]|以及|并且|同时|另外|还有|分别|\band also\b|\bas well as\b", re.I)
LONG_QUESTION = 120


def sub_questions(question: str) -> int:
    return len([p for p in _PARTS.split(question) if len(p.strip()) >= 4])


def classify(question: str, matched_domains: Iterable[str]) -> Complexity:
    """Complex when the question spans several knowledge domains, has several parts, or is long.

    A question naming exactly one domain is simple whatever its length: a second sentence there
    is context ("…? order-service keeps restarting since today's deploy") or a second question
    about the same runbook, which one lookup answers; the planner would only add its cost."""
    domains = set(matched_domains)
    if len(domains) >= 2:
        return "complex"
    if len(domains) == 1:
        return "simple"
    if sub_questions(question) >= 2 and len(question) > 30:
        return "complex"
    if len(question) > LONG_QUESTION:
        return "complex"
    return "simple"
