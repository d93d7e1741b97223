"""The planner's knowledge map, bounded by a token budget whatever the size of the base. Pure.

The full map (every document's title, covers and keywords) grows with the base: 5,879 tokens of
planner prompt on the 30 shipped runbooks, far more on a thousand. The planner needs two things
from it: which domains exist, and — for the domains the question touches — which documents and
words to look up. So the map is built per question:

1. each symptom of the question (``graph.routing.symptoms``) ranks the documents: an exact keyword
   or title match (L0) first, then the rarer question terms a document's name fields (title, file
   name, keywords, covers) hold, then its body terms, weighted by rarity in the base;
2. domains are listed in the order the symptoms touch them (each symptom's best domain first, in
   the question's order, then the next best), each with its ``when_to_retrieve`` and its matching
   documents (best first, with keywords and covers, a few per domain and the count of the rest);
3. the domains no symptom touches follow, shortened, and when the budget is spent only by name
   (``other_domains``), then only by count (``omitted_domains``).

The YAML keeps the full map's shape (``domains → {when_to_retrieve, documents[title, covers,
keywords]}``), so a planner reading either finds the same fields.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import PurePosixPath
from typing import Any

import yaml

from retrieval.l0.catalog import DocInfo
from retrieval.l0.l0_index import L0Match
from retrieval.parsing.terms import query_terms
from retrieval.parsing.textnorm import split_identifier
from telemetry.tokens import estimate_tokens  # the estimate the offline model reports as usage

DEFAULT_BUDGET = 1000  # tokens of map; the planner prompt around it is ~500 more
DOCS_PER_DOMAIN = 3  # matching documents shown per touched domain
KEYWORDS_PER_DOC = 6
COVERS_PER_DOC = 3
WHEN_CHARS = 110  # a touched domain's when_to_retrieve
SHORT_WHEN_CHARS = 40  # an untouched domain's
L0_BONUS = 6.0  # an exact keyword/title match outranks any overlap of ordinary words
BODY_WEIGHT = 0.25  # a term only in the body says less than one in the document's name fields
RELATIVE_FLOOR = 0.4  # of the symptom's best document: weaker matches are noise on the map
# Words that say what is asked, not what is wrong: they must not pull documents onto the map.
_ASKING_TEXT = """排查 处理 解决 定位 分析 修复 恢复 原因 根因 问题 建议 思路 步骤 方法 综合 可能 给出 并 怎么
    怎么办 如何 分别 各自 最近 一下 看看 请 帮 情况 现在 一直 很 高 快 也 又 还 了
    troubleshoot debug fix resolve investigate check handle diagnose cause issue problem steps
    first related"""
ASKING = frozenset(_ASKING_TEXT.split())
_CUT = re.compile(r"[，。；;,.!?！？、]")


@dataclass(frozen=True)
class Ranked:
    doc: DocInfo
    score: float


@lru_cache(maxsize=8192)
def _name_terms(title: str, file_path: str, keywords: tuple[str, ...], covers: tuple[str, ...]):  # noqa: ANN202
    stem = PurePosixPath(file_path).stem
    text = " ".join([title, stem, " ".join(split_identifier(stem)), *keywords, *covers])
    return frozenset(query_terms(text))


def name_terms(doc: DocInfo) -> frozenset[str]:
    return _name_terms(doc.title, doc.file_path, doc.keywords, doc.covers)


def rank_documents(
    symptom: str,
    docs: Iterable[DocInfo],
    idf: Callable[[str], float],
    l0: Sequence[L0Match] = (),
    specific: Callable[[str], bool] = lambda _term: True,
) -> list[Ranked]:
    """Documents one symptom points at, best first: those sharing nothing with it, or much less
    than the best, are left out. An exact match counts only on a specific keyword (``ERR_TIMEOUT``,
    not ``Redis`` in a base with ten Redis runbooks) or the title."""
    terms = [t for t in query_terms(symptom) if t not in ASKING]
    exact = {
        m.entry.doc_id: len([k for k in m.keywords if specific(k)]) + int(m.title_hit) for m in l0
    }
    weights = {t: max(idf(t), 0.1) for t in terms}
    out = []
    for d in docs:
        names = name_terms(d)
        score = L0_BONUS * exact.get(d.doc_id, 0)
        for t, w in weights.items():
            if t in names:
                score += w
            elif t in d.terms:
                score += BODY_WEIGHT * w
        if score > 0:
            out.append(Ranked(d, score))
    out.sort(key=lambda r: (-r.score, r.doc.file_path))
    floor = out[0].score * RELATIVE_FLOOR if out else 0
    return [r for r in out if r.score >= floor]


def _short(text: str, limit: int) -> str:
    text = " ".join(str(text).split())
    if len(text) <= limit:
        return text
    head = text[:limit]
    cuts = [m.end() for m in _CUT.finditer(head)]
    # End at a clause boundary when one is not too early; a map line, not a quote.
    return (head[: cuts[-1]] if cuts and cuts[-1] >= limit // 2 else head).rstrip("，、,; ") + "…"


def _doc_entry(d: DocInfo, asked: str = "") -> dict[str, Any]:
    """Title, covers and keywords; the keywords the question says come first, so the ones a
    step would look up are never the ones cut ("Connection is not available", the ninth)."""
    entry: dict[str, Any] = {"title": d.title}
    if d.covers:
        entry["covers"] = list(d.covers[:COVERS_PER_DOC])
    if d.keywords:
        said = sorted(d.keywords, key=lambda k: str(k).casefold() not in asked)
        entry["keywords"] = said[:KEYWORDS_PER_DOC]
    return entry


def domain_order(per_symptom: Sequence[Sequence[Ranked]]) -> list[tuple[str, list[DocInfo]]]:
    """Touched domains, round robin over the symptoms (each one's best domain first), each with its
    matching documents best first."""
    order: list[str] = []
    docs: dict[str, list[DocInfo]] = {}
    best: dict[str, float] = {}
    lists = []
    for ranked in per_symptom:
        seen: list[str] = []
        for r in ranked:
            cat = r.doc.category
            if cat not in seen:
                seen.append(cat)
            if r.doc not in docs.setdefault(cat, []):
                docs[cat].append(r.doc)
            best[r.doc.doc_id] = max(best.get(r.doc.doc_id, 0.0), r.score)
        lists.append(seen)
    for depth in range(max((len(s) for s in lists), default=0)):
        for seen in lists:
            if depth < len(seen) and seen[depth] not in order:
                order.append(seen[depth])
    return [(cat, sorted(docs[cat], key=lambda d: (-best[d.doc_id], d.file_path))) for cat in order]


def _dump(data: dict[str, Any]) -> str:
    return yaml.safe_dump(data, allow_unicode=True, sort_keys=False, width=1000).strip()


def budgeted_map(
    categories: dict[str, list[DocInfo]],
    when: dict[str, str],
    per_symptom: Sequence[Sequence[Ranked]],
    budget: int = DEFAULT_BUDGET,
    asked: Sequence[str] = (),
) -> str:
    """The map for one question, at most ``budget`` tokens (a domain that does not fit is named
    instead; names that do not fit are counted). ``asked``: the symptoms' texts."""
    domains: dict[str, Any] = {}
    data: dict[str, Any] = {"domains": domains}

    def fits() -> bool:
        return estimate_tokens(_dump(data)) <= budget

    said = " ".join(asked).casefold()
    touched = domain_order(per_symptom)
    for cat, docs in touched:
        shown = docs[:DOCS_PER_DOMAIN]
        body: dict[str, Any] = {
            "when_to_retrieve": _short(when.get(cat, ""), WHEN_CHARS),
            "documents": [_doc_entry(d, said) for d in shown],
        }
        if (rest := len(categories.get(cat, [])) - len(shown)) > 0:
            body["more_documents"] = rest
        domains[cat] = body
        while not fits() and len(body["documents"]) > 1:  # fewer documents before fewer domains
            body["documents"].pop()
            body["more_documents"] = len(categories.get(cat, [])) - len(body["documents"])
        if not fits():
            del domains[cat]
            break
    untouched = [c for c in sorted(categories) if c not in domains]
    names: list[str] = []
    for cat in untouched:
        if "other_domains" not in data:
            domains[cat] = {
                "when_to_retrieve": _short(when.get(cat, ""), SHORT_WHEN_CHARS),
                "document_count": len(categories[cat]),
            }
            if fits():
                continue
            del domains[cat]
            data["other_domains"] = names
        names.append(cat)
        if not fits():
            names.pop()
            data["omitted_domains"] = len(untouched) - len([c for c in untouched if c in domains])
            data["omitted_domains"] -= len(names)
            break
    if not names:
        data.pop("other_domains", None)
    return _dump(data)


__all__ = ["DEFAULT_BUDGET", "Ranked", "budgeted_map", "domain_order", "rank_documents"]
