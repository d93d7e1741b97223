"""Question complexity: simple questions go to one ReAct assistant, complex ones to the
supervisor → planner → executor loop. Pure and explainable, so routing costs no model call."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import Literal

Complexity = Literal["simple", "complex"]
_PARTS = re.compile(r"[？?；;]|以及|并且|同时|另外|还有|分别|\band also\b|\bas well as\b", re.I)
LONG_QUESTION = 120
# Where one symptom ends and the next begins (the offline planner splits the same way).
CLAUSES = re.compile(r"[，,。；;！!？?\n]|同时|另外|还有|以及|并且|而且|\band\b|\balso\b", re.I)


def symptom_domains(question: str, named: Callable[[str], set[str]]) -> set[str]:
    """The domains named by the question's clauses, when two or more clauses name one: a single
    symptom whose words span two domains ("Redis READONLY after a sentinel failover": cache and
    infrastructure) is one lookup, not a plan. Empty when at most one clause names a domain."""
    per_clause = [d for c in CLAUSES.split(question) if c.strip() and (d := named(c))]
    if len(per_clause) < 2:
        return set()
    return set().union(*per_clause)


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
