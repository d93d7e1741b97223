"""Question complexity and the question's symptoms. Pure and explainable, so routing costs no model
call.

Simple questions go to one ReAct assistant, complex ones to the supervisor → planner → executor
loop. A question that reports several symptoms (``订单服务连接池等待线程很高，支付网关又报
ERR_TIMEOUT，Redis 内存也快满了``) is complex, and ``symptoms`` names each one: the planner's map is
ranked by them and the planner plans one step per symptom.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import Literal

from retrieval.judging.entities import technologies_in
from retrieval.parsing.terms import query_terms
from retrieval.parsing.textnorm import code_tokens

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


MAX_SYMPTOMS = 4

_JOINERS = r"与此同时|同时|另外|此外|以及|还有|并且|而且"
_CLAUSES = re.compile(
    rf"[，,。；;！!？?\n]+|\.\s+|(?=(?:{_JOINERS}))|(?:\s+|^)(?<!\band )(?=(?:and also|also|plus|"
    r"meanwhile|in addition|and)\s)",
    re.I,
)
# Something reported in addition: a joining word, or 又/也/还 before what went wrong ("又报",
# "也快满了") — not "想删掉又怕…" (a worry about the same thing) or "还是报错" (still the same).
_ADDED = re.compile(
    rf"^(?:{_JOINERS})|(?:又|也|还)(?:在|开始|一直|快|有|出现了)?(?:报|出现|提示|告警|发生|超时|失败|满|"
    r"高|慢|挂|宕|卡|延迟|堆积|打满|飙|涨|不可用|异常|重启|OOM)"
    r"|^(?:and also|also|plus|meanwhile|in addition)\b|\bas well\b|\balso\b",
    re.I,
)
# A clause that asks about (or continues) what came before it.
_ASKS = re.compile(
    r"^(?:怎么|怎样|如何|为什么|为何|能否|能不能|可不可以|可以|是否|有没有|有什么|要不要|需要|应该|该|"
    r"各自|分别|然后|再|那|这|它|其|之后|以后|接着|请|帮我|帮忙|求|麻烦|综合|"
    r"how|what|why|which|where|when|should|can|could|is|are|do|does|did|any|please|then|it|"
    r"that|this|these|those|so)(?![A-Za-z])",
    re.I,
)
# A clause asking whether (是不是, 是否, …吗？) wonders about the cause of what came before.
_QUESTION = re.compile(r"是不是|是否|会不会|吗\s*$|\?\s*$", re.I)
_PLAIN_AND = re.compile(r"^and\s(?!also\b)", re.I)
_LEAD = re.compile(rf"^(?:{_JOINERS}|and also|also|plus|meanwhile|in addition|and)\s*", re.I)


def sub_questions(question: str) -> int:
    return len([p for p in _PARTS.split(question) if len(p.strip()) >= 4])


def _codes(text: str) -> set[str]:
    return {c.casefold() for c in code_tokens(text)}


def _new_symptom(current: str, clause: str) -> bool:
    bare = _LEAD.sub("", clause)
    if _ASKS.match(bare) or _QUESTION.search(bare) or len(query_terms(bare)) < 2:
        return False
    if _codes(current) & _codes(clause):
        return False  # the same error code or alert: more about the same symptom
    # Products, not codes, tell symptoms apart: one incident often shows several codes
    # (KafkaUnderReplicatedPartitions firing and producers getting NotEnoughReplicasException).
    ours, theirs = technologies_in(current), technologies_in(clause)
    if ours and theirs and ours & theirs:
        return False  # the same product: more about the same symptom
    if _PLAIN_AND.match(clause):
        # "X and Y" is mostly one incident told in two halves ("etcd reports … and the
        # apiserver rejects writes"): a symptom of its own only when both name products.
        return bool(ours and theirs)
    return bool(_ADDED.search(clause)) or bool(ours and theirs)


def symptoms(question: str) -> list[str]:
    """The distinct symptoms a question reports, each with the clauses that elaborate it, in the
    question's order; ``[question]`` when it reports one.

    Freer than the lookup's aspect split (``retrieval.lookup.aspects``): a clause that reports something
    *in addition* (a joining word, 又/也/还 before a verb, ``also``/``and``) or names another product
    or code starts a symptom. A false split costs the planner one extra lookup; a missed one loses a
    symptom's runbook. Questions about what came before (``怎么处理``) join the last symptom."""
    clauses = [c.strip() for c in _CLAUSES.split(question) if c and c.strip()]
    found: list[str] = []
    for clause in clauses:
        if found and not _new_symptom(found[-1], clause):
            found[-1] = f"{found[-1]}，{clause}"
        else:
            found.append(_LEAD.sub("", clause) if found else clause)
    if len(found) < 2:
        return [question.strip()]
    if len(found) > MAX_SYMPTOMS:
        found = [*found[: MAX_SYMPTOMS - 1], "，".join(found[MAX_SYMPTOMS - 1 :])]
    return found


def classify(question: str, matched_domains: Iterable[str]) -> Complexity:
    """Complex when the question spans several knowledge domains, reports several symptoms, has
    several parts, or is long.

    A question naming exactly one domain and one symptom is simple whatever its length: a second
    sentence there is context ("…? order-service keeps restarting since today's deploy") or a
    second question about the same runbook, which one lookup answers; the planner would only add
    its cost."""
    domains = set(matched_domains)
    if len(domains) >= 2:
        return "complex"
    if domains and len(symptoms(question)) >= 2:  # symptoms the base has runbooks for
        return "complex"
    if len(domains) == 1:
        return "simple"
    if sub_questions(question) >= 2 and len(question) > 30:
        return "complex"
    if len(question) > LONG_QUESTION:
        return "complex"
    return "simple"
