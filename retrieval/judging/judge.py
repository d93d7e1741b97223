"""Applies the configured judge to the fused documents: a level (and a confidence) for each. Pure."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from retrieval.judging.calibration import (
    Calibration,
    capped,
    evidence,
    lacks_every_code,
    ranks_after,
)
from retrieval.judging.entities import Missing, QueryEntities, missing_in
from retrieval.judging.relevance import RelevanceLevel, Thresholds, level_for, similarity
from retrieval.l1.fusion import DocHit

_LEVEL_RANK = {
    RelevanceLevel.PRECISE: 3,
    RelevanceLevel.HIGHLY_RELEVANT: 2,
    RelevanceLevel.REFERENCE: 1,
    RelevanceLevel.NONE: 0,
}
JUDGED_DOCS = 8  # documents judged per lookup: the primary and its supplements come from these
MISSING_CODE_CAP = 0.9  # an identifier-only query, a document without it: below REFERENCE


@dataclass
class Judged:
    doc: DocHit
    level: RelevanceLevel
    similarity: float | None  # FS-1, always computed and shown
    confidence: float | None = None  # the calibrated judge's score
    probability: float | None = None
    features: dict[str, float] = field(default_factory=dict)
    rule: str | None = None  # the entity rule that lowered the confidence, if any

    @property
    def found(self) -> bool:
        return self.level is not RelevanceLevel.NONE

    def record(self, shown: bool) -> dict[str, Any]:
        """What the artifact keeps about this document (raw scores, for the records)."""
        r = lambda v: None if v is None else round(v, 6)  # noqa: E731
        return {
            "source": self.doc.path,
            "shown": shown,
            "level": self.level.value,
            "confidence": r(self.confidence),
            "probability": r(self.probability),
            "dense_similarity": r(self.similarity),
            "rrf": r(self.doc.rrf),
            "ranks": dict(self.doc.ranks),
            "bm25_score": r(self.doc.scores.get("bm25")),
            "features": {k: round(v, 6) for k, v in self.features.items()},
            "rule": self.rule,
        }


def _term_evidence(stats: Any) -> dict[str, Any]:
    if stats is None:
        return {}
    n = len(stats)
    return {
        "terms_of": lambda h: d.terms if (d := stats.by_path(h.path)) else frozenset(),
        "title_terms_of": lambda h: d.title_terms if (d := stats.by_path(h.path)) else frozenset(),
        "idf": stats.idf,
        "max_idf": math.log((n + 1) / 0.5),
        # a word the base holds in another form only (``rebalanced``: ``rebalancing``) is known
        "unknown": lambda t: stats.document_frequency(t) == 0 and not stats.word_forms([t]),
        "holds_code": stats.holds_code,
    }


def _missing(
    entities: QueryEntities | None, stats: Any, text_of: Callable[[DocHit], str]
) -> Callable[[DocHit], Missing] | None:
    if not entities or stats is None:
        return None

    def of(doc: DocHit) -> Missing:
        info = stats.by_path(doc.path)
        terms = info.terms if info else frozenset()
        name = info.name_text if info else ""
        return missing_in(entities, terms, name, text_of(doc))

    return of


def _text(doc: DocHit, title: str) -> str:
    parts = [title, *(str(c.fields.get("text", "")) for c in doc.chunks)]
    return "\n".join(parts)


def judge_documents(
    docs: Sequence[DocHit],
    *,
    judge: str,
    calibration: Calibration | None,
    thresholds: Thresholds,
    read: float,
    terms: Sequence[str],
    l0_paths: Sequence[str],
    title_of: Callable[[str], str],
    name_of: Callable[[str], str] | None = None,
    stats: Any = None,
    codes: Sequence[str] = (),
    code_only: bool = False,
    entities: QueryEntities | None = None,
    query_text: str = "",
) -> list[Judged]:
    """The first ``JUDGED_DOCS`` documents, best first, each with its level (the calibrated judge
    re-orders them by its probability). ``name_of`` gives
    what names a document (title, file name, keywords, summary); ``title_of`` its title;
    ``stats`` the catalog (term rarity and each document's terms).

    A document that only L0 found (no chunk from either route: L1 is down, or missed it) is at least
    REFERENCE — the keyword match is the evidence, as it was before L1 existed; when L1 returned
    nothing at all the calibrated judge (fitted on L1 evidence) steps aside and that rule decides. A query that is
    nothing but identifiers, one a code (``code_only``: ``ERR_TIMEOUT``), is never answered by a
    document containing none of them: it stays below REFERENCE whatever else it shares.
    ``entities`` (the query's products, alert names, resource kinds) feed the entity features and
    rules (``calibration.capped``): another product's runbook is not found, a sibling alert's is at
    most REFERENCE.
    """
    out: list[Judged] = []
    top = list(docs[:JUDGED_DOCS])
    if not any(d.chunks for d in top):  # no L1 evidence at all (down, or empty): L0 alone decides
        judge = "dense"
    text_of = lambda h: _text(h, title_of(h.path))  # noqa: E731
    missing = _missing(entities, stats, text_of)
    calibrated = judge != "dense" and calibration is not None
    said = query_text.casefold()
    xs = (
        [
            evidence(
                top,
                i,
                read=read,
                terms=terms,
                text_of=text_of,
                name_of=lambda h: (name_of or title_of)(h.path),
                **_term_evidence(stats),
                codes=codes,
                l0_paths=l0_paths,
                max_l2=thresholds.max_l2_distance,
                entity_missing=missing,
                query_text=said,
            )
            for i in range(len(top))
        ]
        if calibrated
        else []
    )
    # both stages: a document's probability also weighs how far it stands out from the others
    ps = calibration.probabilities(xs) if calibrated else []  # type: ignore[union-attr]
    for i, doc in enumerate(top):
        d = doc.best_distance
        sim = similarity(d, thresholds.max_l2_distance) if d is not None else None
        if not calibrated:
            level = level_for(sim, thresholds)
            j = Judged(doc, level, sim)
        else:
            x, p = xs[i], ps[i]
            conf, rule = capped(
                calibration.to_confidence(p),  # type: ignore[union-attr]
                x,
                thresholds.highly_relevant,
                thresholds.reference,
            )
            if code_only and lacks_every_code(x):
                conf = min(conf, thresholds.reference * MISSING_CODE_CAP)
            j = Judged(doc, level_for(conf, thresholds), sim, conf, p, x, rule)
        if not j.found and doc.path in l0_paths and (not doc.chunks or judge == "dense"):
            j.level = RelevanceLevel.REFERENCE
        out.append(j)
    if calibrated:
        # The probability that a document answers the query weighs more evidence than either
        # route's rank: it orders the documents (pointwise re-ranking); ties keep fused order.
        # Within a level, a document that meets an entity rule's condition (another product, a
        # sibling alert) goes after those that do not: the runbook that names the query's alert
        # comes first. Whether the rule lowered its confidence does not matter: of two runbooks
        # that both lack the query's product, the likelier one stays first. A capped document
        # still found outranks documents judged NONE.
        out.sort(
            key=lambda j: (
                -_LEVEL_RANK[j.level],
                ranks_after(j.features),
                -(j.probability or 0.0),
            )
        )
    return out
