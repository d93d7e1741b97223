"""The offline planner's reading of the knowledge map: which runbook each symptom of a question
points at, and one lookup step per symptom (``roles.plan`` turns them into the Plan call)."""

from __future__ import annotations

import re
from typing import Any

from graph.routing import CLAUSES  # where one symptom ends and the next begins
from llm.offline.text import terms, unique, yaml_block

MAX_QUERY_WORDS = 6


def _map_domains(system: str) -> dict[str, list[dict[str, Any]]]:
    data = yaml_block(system) or {}
    domains = data.get("domains", data) if isinstance(data, dict) else {}
    out = {}
    for name, body in (domains or {}).items():
        docs = (body or {}).get("documents", []) if isinstance(body, dict) else []
        out[str(name)] = [d for d in docs if isinstance(d, dict)]
    return out


def _generic_keywords(domains: dict[str, list[dict[str, Any]]]) -> set[str]:
    """Keywords that name a topic several mapped documents share (``Redis``), not one document."""
    titles = [str(d.get("title", "")).lower() for docs in domains.values() for d in docs]
    kws = {
        str(k).lower() for docs in domains.values() for d in docs for k in d.get("keywords") or []
    }
    return {k for k in kws if sum(k in t for t in titles) >= 2}


def _has(text: str, term: str) -> bool:
    """``term`` in ``text``; an English word or code only as a whole word ("redis" is not in
    "rediscommandtimeoutexception", "out" not in "timeout")."""
    if not term.isascii():
        return term in text
    return re.search(rf"(?<![a-z0-9_]){re.escape(term)}(?![a-z0-9_])", text) is not None


def _domain_score(
    question: str, qterms: list[str], docs: list[dict[str, Any]], generic: set[str] = frozenset()
) -> tuple[int, list[str]]:
    """Keywords found in the question weigh 3 (a phrase 4, a topic keyword several titles share
    1), title words 2, cover topics 1."""
    q = question.lower()
    score, hits = 0, []
    for d in docs:
        for kw in d.get("keywords", []) or []:
            k = str(kw).lower()
            if _has(q, k):
                weight = 1 if k in generic else 4 if " " in k.strip() else 3
                score, hits = score + weight, [*hits, str(kw)]
        title, covers = (
            str(d.get("title", "")).lower(),
            " ".join(map(str, d.get("covers", []) or [])).lower(),
        )
        for t in qterms:
            if t.isascii() and len(t) < 4:
                continue  # "out" is inside "Timeout": short English words match anything
            if _has(title, t.lower()):
                score, hits = score + 2, [*hits, t]
            elif _has(covers, t.lower()):
                score, hits = score + 1, [*hits, t]
    return score, unique(hits)


def _symptom_docs(
    clause: str, domains: dict[str, list[dict[str, Any]]]
) -> list[tuple[str, str, list[str]]]:
    """(domain, title, matched terms) of the runbooks one clause points at clearly."""
    qterms = terms(clause)
    generic = _generic_keywords(domains)
    scored = [
        (*_domain_score(clause, qterms, [d], generic), name, str(d.get("title", "")))
        for name, docs in domains.items()
        for d in docs
    ]
    low = clause.lower()

    def first_hit(hits: list[str]) -> int:  # the clause's subject comes first: 连接池等待线程
        return min((low.find(h.lower()) for h in hits if h.lower() in low), default=len(low))

    scored = sorted(
        (x for x in scored if x[0] >= 2), key=lambda x: (-x[0], first_hit(x[1]), x[2], x[3])
    )
    if not scored:
        return []
    # One symptom, one runbook: the clause's best match (ties kept); a runbook that merely shares
    # a word with the clause ("线程" in "连接池等待线程") would answer a symptom nobody asked about.
    # The clause's words that name any runbook clearly go into its one lookup, which ranks them.
    floor = max(2, scored[0][0] / 2)
    _, hits, name, title = scored[0]
    words = unique(h for score, more, _, _ in scored if score >= floor for h in [*hits, *more])
    return [(name, title, words)]


def _best_keyword(clause: str, domains: dict[str, list[dict[str, Any]]], title: str) -> str:
    """The mapped document's keyword that shares most terms with the symptom ("Redis 内存满" for
    "Redis 内存也快满了"): the words a planner takes from the map (chat_planner.md rule 2)."""
    doc = next((d for docs in domains.values() for d in docs if d.get("title") == title), {})
    words = {t.lower() for t in terms(clause)} | set(clause.lower())
    best, best_n = "", 1
    for kw in doc.get("keywords") or []:
        kt = {t.lower() for t in terms(str(kw))}
        n = len(kt & words)
        if n > best_n or (n == best_n and best and len(str(kw)) < len(best)):
            best, best_n = str(kw), n
    return best


def plan_symptoms(
    question: str, system: str, done: list[str], symptoms: list[str] | None = None
) -> list[dict[str, Any]]:
    """One step per distinct symptom: each clause of the question that points at a runbook gives
    lookup of its best runbook, in the question's order, with the runbook's keyword closest to
    the clause; a runbook two clauses point at is looked up once, with the words of both. With
    the symptoms the graph found (the planner view's ``symptoms``), the symptoms are the clauses."""
    domains = _map_domains(system)
    by_title: dict[str, dict[str, Any]] = {}
    given = symptoms if symptoms and len(symptoms) > 1 else None
    for clause in given or CLAUSES.split(question):
        found = _symptom_docs(clause, domains)
        for name, title, hits in found[:1]:  # a clause's best runbook, not its neighbours
            words = unique([_best_keyword(clause, domains, title), *hits])
            if title in by_title:  # another clause about the same runbook: its words too
                words = unique([*by_title[title]["words"], *words])[:MAX_QUERY_WORDS]
            by_title[title] = {"name": name, "words": words}
    steps = []
    for step in by_title.values():
        query = " ".join(step["words"])
        instruction = f"在领域 {step['name']} 检索：{query}"
        if instruction not in done:
            steps.append(
                {"instruction": instruction, "domains": [step["name"]], "query": query}
                | {"finish": False}
            )
    return steps


def plan_chat(question: str, system: str, done: list[str]) -> dict[str, Any]:
    """Domains ranked by how strongly the question points at them; weak matches are dropped."""
    qterms = terms(question)
    scored = [
        (*_domain_score(question, qterms, docs), name)
        for name, docs in _map_domains(system).items()
    ]
    scored = sorted((x for x in scored if x[0] > 0), key=lambda x: (-x[0], x[2]))
    if scored:
        floor = max(2, scored[0][0] / 3)
        scored = [x for x in scored if x[0] >= floor] or scored[:1]
    for _, hits, name in scored:
        if name not in done:
            query = " ".join(hits)
            return {
                "instruction": f"在领域 {name} 检索：{query}",
                "domains": [name],
                "query": query,
                "finish": False,
            }
    if not scored and "*" not in done:
        return {
            "instruction": f"在知识库中检索：{question}",
            "domains": ["*"],
            "query": question,
            "finish": False,
        }
    return {"instruction": "", "domains": [], "finish": True}
