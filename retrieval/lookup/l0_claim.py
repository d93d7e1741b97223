"""Does an L0 match name its document alone? Pure (bodies come from the caller's reader).

PRECISE says "no document in the base is more precise" and skips L1. That holds when the query
names the document itself — its title, a title part or its file name — or uses a keyword of it that
no other runbook's text contains (``ERR_TIMEOUT`` in a base whose error-code manual is the only
runbook that mentions it). A keyword that other runbooks also explain names a symptom several of
them cover: ``CLUSTERDOWN`` is a keyword of a Redis configuration guide and the error the
cluster-state runbook is about; ``PIDPressure`` is a keyword of a disk-pressure runbook and the
subject of the PID-pressure one. Then L1 runs, the L0 hit one more vote: when L1's first document
(as judged) is still the L0 one, both agree and it is PRECISE; otherwise the judge's ranking and
levels answer.

The check runs only when L0 found exactly one document, and reads only the bodies of documents
whose content terms hold all the keyword's words (the catalog's term sets narrow them first; a
runbook that spells the keyword otherwise — ``Read-only`` for ``READONLY`` — is not found by them).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from retrieval.judging.relevance import RelevanceLevel
from retrieval.parsing.terms import query_terms
from retrieval.parsing.textnorm import compact_term

# More documents than this holding all of a keyword's words: the keyword is common ground
# (``Full GC``), not one runbook's; no bodies are read.
MAX_READS = 8


def keyword_is_exclusive(
    term: str,
    original: str,
    doc_id: str,
    docs: Iterable[Any],
    body_of: Callable[[Any], str | None],
) -> bool:
    """No document but ``doc_id`` holds the compact keyword ``term`` (``original``: as written)
    in its body. ``docs``: the base's documents (``doc_id``, ``terms``)."""
    words = query_terms(original) or [term]
    others = [d for d in docs if d.doc_id != doc_id and all(w in d.terms for w in words)]
    if len(others) > MAX_READS:
        return False
    for d in others:
        body = body_of(d)
        if body is None or term in compact_term(body):
            return False  # unreadable: cannot tell, so not exclusive
    return True


def names_alone(match: Any, catalog: Any, body_of: Callable[[Any], str | None] | None) -> bool:
    """``match`` (an ``L0Match``) names its document alone: by a name term, or by a specific
    keyword no other document's body holds. ``catalog``: a ``DocumentCatalog`` (its documents
    and ``is_specific``). Without a body reader: as before, any match."""
    if match.names or body_of is None:
        return True
    originals = {compact_term(k): k for k in match.entry.keywords}
    pool = catalog.all()
    return any(
        keyword_is_exclusive(t, originals.get(t, t), match.entry.doc_id, pool, body_of)
        for t in match.keywords
        if catalog.is_specific(t)
    )


@dataclass
class Claim:
    """What L0 claims: the documents a specific term names; the one named alone (PRECISE, L1
    skipped), or the one a keyword others explain names (PRECISE only if L1 agrees)."""

    named: list[Any] = field(default_factory=list)
    alone: Any = None
    to_confirm: Any = None


def l0_claim(
    found: Sequence[tuple[Any, Any]], catalog: Any, q: Any, body_of: Callable[[Any], str | None]
) -> Claim:
    """``found``: (``L0Match``, ``DocInfo``) pairs; ``q``: the ``LookupQuery``.

    PRECISE needs exactly one document named by its match. A topic word many documents share (a
    generic keyword such as "Redis") is no evidence for one of them: BM25 weighs it. A match on a
    document that misses the query's product or alert (``not_named_for``) is no claim either."""
    named = [d for m, d in found if any(catalog.is_specific(t) for t in m.terms)]
    if len(named) != 1:
        return Claim(named)
    match = next(m for m, d in found if d is named[0])
    if q.not_named_for(named[0], list(match.terms)):
        return Claim(named)
    if names_alone(match, catalog, body_of):
        return Claim(named, alone=named[0])
    return Claim(named, to_confirm=named[0])


def agrees(doc: Any, judged: Sequence[Any]) -> bool:
    """L1 confirms L0's one document: it is the first judged document, found, on L1 evidence
    (chunks of its own; a document only L0 returned, with L1 down, confirms nothing)."""
    return (
        bool(judged)
        and judged[0].found
        and bool(judged[0].doc.chunks)
        and (judged[0].doc.path == doc.file_path)
    )


def keyword_floor(doc: Any, judged: list[Any]) -> list[Any]:
    """L1 found nothing it would answer with, yet L0's one document matched a keyword of its own:
    the match is evidence, as for a document only L0 found — that document is REFERENCE and first
    (not PRECISE: other runbooks explain the keyword too). ``judged`` otherwise as it is."""
    if doc is None or any(j.found for j in judged):
        return judged
    mine = [j for j in judged if j.doc.path == doc.file_path]
    for j in mine:
        j.level = RelevanceLevel.REFERENCE
    return mine + [j for j in judged if j not in mine]
