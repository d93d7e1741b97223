"""Split a question that reports several symptoms into one aspect per symptom. Pure.

``Redis 内存快满了，订单服务又报连接超时，怎么排查`` holds two symptoms, each with its own runbook; judged
as one query, neither runbook covers "all" of it and both look weak. The lookup judges each aspect on
its own (``lookup.py``) and shows the best document for each.

The split is conservative, because a false split costs a good single answer — most questions with
commas elaborate one symptom ("ES 查询越来越慢，数据节点的老年代一直在做 GC"). A clause (text between
clause punctuation, or after a joining word) starts a new aspect only when

* it reports something *in addition*: a joining word (``同时``, ``另外``, ``此外``, ``以及``; ``also``, ``plus``, ``meanwhile``, ``in addition``, ``as well``) or an
  additive verb (``又报``, ``也出现``, ``还报``), or both it and the aspect before it name products, and not the same
  ones (``Redis …，Kafka …``); and
* it is a symptom of its own: two or more content words, not a question about the previous clause
  (``怎么排查``, ``有什么区别``, ``how do I fix it``), and not about the same subject.

Everything else joins the aspect before it. At most ``MAX_ASPECTS`` aspects; a query that yields
fewer than two is not split.
"""

from __future__ import annotations

import re

from retrieval.judging.entities import technologies_in
from retrieval.parsing.terms import query_terms

MAX_ASPECTS = 3
_JOINERS = r"与此同时|同时|另外|此外|以及"
_CLAUSES = re.compile(
    rf"[，,。；;！!？?\n]+|(?=(?:{_JOINERS}))|(?=\b(?:and also|also|plus|meanwhile|in addition|"
    r"on top of that)\b)",
    re.I,
)
_ADDITIVE = re.compile(
    rf"^(?:{_JOINERS})|(?:又|也|还)(?:在|开始|一直)?(?:报|出现|提示|告警|有告警|发生|超时|失败)"
    r"|^(?:and also|also|plus|meanwhile|in addition|on top of that)\b|\bas well\b",
    re.I,
)
_TRAILING = re.compile(r"\s*(?:\band\b|和|且)$", re.I)
# A clause starting with one of these asks about (or continues) the clause before it.
_FOLLOW_UP = re.compile(
    r"^(?:怎么|怎样|如何|为什么|为何|能否|能不能|可不可以|可以|是否|有没有|有什么|要不要|需要|应该|该|"
    r"各自|分别|然后|再|那|这|它|其|之后|以后|接着|请|帮我|求|麻烦|"
    r"how|what|why|which|where|when|should|can|could|is|are|do|does|did|any|please|then|it|"
    r"that|this|so)(?![A-Za-z])",
    re.I,
)
# Words that describe the asking, not the symptom.
_ASKING_TEXT = """排查 处理 解决 定位 分析 修复 恢复 办 查 看 看看 原因 问题 建议 思路 步骤 方法 一下 搞 弄
    又 也 还 troubleshoot debug fix resolve investigate check handle diagnose cause issue problem
    steps also plus meanwhile addition"""
_ASKING = frozenset(_ASKING_TEXT.split())


def _content(clause: str) -> list[str]:
    return [t for t in query_terms(clause) if t not in _ASKING]


def _same_subject(a: str, b: str) -> bool:
    ta, tb = technologies_in(a), technologies_in(b)
    if ta and tb:
        return bool(ta & tb)
    ca, cb = set(_content(a)), set(_content(b))
    return bool(ca and cb) and len(ca & cb) * 2 >= min(len(ca), len(cb))


def _starts_aspect(current: str, clause: str) -> bool:
    if len(_content(clause)) < 2 or _FOLLOW_UP.match(clause):
        return False
    if _same_subject(current, clause):
        return False
    ours, theirs = technologies_in(current), technologies_in(clause)
    other_product = bool(theirs and ours) and not (theirs & ours)
    return bool(_ADDITIVE.search(clause)) or other_product


def split_aspects(query: str) -> list[str]:
    """The query's symptoms, each as a self-contained query; ``[query]`` when it reports one."""
    clauses = [_TRAILING.sub("", c.strip()) for c in _CLAUSES.split(query) if c and c.strip()]
    clauses = [c for c in clauses if c]
    if len(clauses) < 2:
        return [query]
    aspects: list[str] = []
    for clause in clauses:
        if aspects and _starts_aspect(aspects[-1], clause):
            aspects.append(clause)
        elif aspects:
            aspects[-1] = f"{aspects[-1]} {clause}"
        else:
            aspects.append(clause)
    if len(aspects) < 2:
        return [query]
    return aspects[:MAX_ASPECTS]
