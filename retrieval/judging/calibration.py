"""The ``calibrated`` judge: all the evidence for a document → one confidence in [0, 1]. Pure.

Evidence (``evidence``): the dense similarity weighted by how much of the query the model can read,
both routes' document ranks, BM25 strength per query term and its margin to the next document, how
many of the query's terms the document contains, whether the routes agree, the fused margin, and L0
keyword hits. A logistic model turns the evidence into the probability that the document answers
the query; a monotone map then places FS-2's thresholds where the levels keep their promise on the
development eval (HIGHLY_RELEVANT right ≥ 95 % of the time, REFERENCE ≥ 80 %, and right answers not
dropped). The weights and the map are data (``calibration.json``), fitted by
``bench/fit_relevance.py`` on ``bench/eval/``; nothing here is tuned by hand.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from retrieval.judging.entities import Missing
from retrieval.judging.relevance import similarity
from retrieval.l1.fusion import BM25_ROUTE, DENSE_ROUTE, DocHit
from retrieval.parsing.textnorm import compact_term
from retrieval.parsing.word_forms import stem

DEFAULT_FILE = Path(__file__).with_name("calibration.json")
FEATURES = (
    "dense_sim_read",  # FS-1 similarity × the share of the query the model reads
    "dense_rank_inv",  # 1 / document rank on the dense route × readability (0 when absent)
    "bm25_rank_inv",  # 1 / document rank on the BM25 route (0 when absent)
    "bm25_per_term",  # best BM25 score / number of query terms
    "bm25_margin",  # (score − next document's best score) / score on BM25
    "coverage",  # share of the query's terms found in the document's title and chunks
    "name_coverage",  # share of the query's terms in what names the document (title, file, summary)
    "idf_coverage",  # share of the query's term rarity (IDF) that the whole document contains
    "idf_missing",  # the rarest query term the document lacks: its IDF / the largest possible IDF
    "unknown_share",  # share of the query's terms no document in the knowledge base contains
    "code_missing",  # share of the query's identifiers the base holds that the document lacks
    "dense_margin",  # (similarity − next document's best similarity) × readability
    "bm25_ratio",  # log(score / next document's best score) on BM25
    "agree",  # both routes put this document first (dense only where it reads the query)
    "rrf_margin",  # (fused score − next document's) / fused score
    "l0_hit",  # the document matched an L0 keyword / title / file name
    "l0_multi",  # several documents matched L0 (the query names more than one)
    "read",  # the share of the query the embedding model reads
    "tech_missing",  # share of the query's products (MongoDB, Kafka, …) the document never mentions
    "alert_missing",  # share of the query's alert names the document never mentions
    "alert_unnamed",  # share of the query's alert names not in what names the document
    "idf_name_coverage",  # share of the query's term rarity (IDF) in what names the document
    "kind_missing",  # share of the query's resource kinds (StatefulSet, PVC, …) it never mentions
    "tech_in_context",  # the query's products only in label values, the document names no other
    "title_unmatched",  # share of the title's term rarity (IDF) the query never says
    "code_unknown",  # share of the query's identifiers that no document of the base holds
    "alert_unknown",  # share of the query's alert names that no document of the base holds
)
# What the fitted model weighs (``bench/fit_relevance.py --features``). The entity and name
# features are computed and recorded for every judged document, but out-of-fold on the fit split
# they did not beat the entity rules below on the same evidence (docs/retrieval.md §5): the rules
# decide on products and alert names. The title's unmatched share did pay (``_unmatched``).
MODEL_FEATURES = (*FEATURES[:18], "title_unmatched")
# Rules beside the model (``capped``), on the same evidence: a document that mentions none of the
# query's products is about another technology (below REFERENCE: found=false); one that never
# mentions the query's alert is a sibling alert's runbook (below HIGHLY_RELEVANT).
OTHER_TECHNOLOGY, SIBLING_ALERT = "other_technology", "sibling_alert"
UNKNOWN_CODE = "unknown_code"
CAP_BELOW = 0.99  # a capped confidence sits just under the threshold it may not reach
STACK_CLIP = 10.0  # first-stage logits are clipped here (a lone document's margin is to -clip)


def _sigmoid(z: float) -> float:
    return 1.0 / (1.0 + math.exp(-max(min(z, 40.0), -40.0)))


def margins(zs: Sequence[float]) -> list[float]:
    """Each logit minus the best other one (a lone document's other is ``-STACK_CLIP``)."""
    out = []
    for i, z in enumerate(zs):
        best = max((o for j, o in enumerate(zs) if j != i), default=-STACK_CLIP)
        out.append(z - best)
    return out


def evidence(
    docs: Sequence[DocHit],
    i: int,
    *,
    read: float,
    terms: Sequence[str],
    text_of: Callable[[DocHit], str],
    name_of: Callable[[DocHit], str] = lambda d: "",
    terms_of: Callable[[DocHit], frozenset[str]] = lambda d: frozenset(),
    idf: Callable[[str], float] = lambda t: 1.0,
    max_idf: float = 1.0,
    unknown: Callable[[str], bool] = lambda t: False,
    codes: Sequence[str] = (),
    l0_paths: Sequence[str] = (),
    max_l2: float = 2.0,
    entity_missing: Callable[[DocHit], Missing] | None = None,
    title_terms_of: Callable[[DocHit], frozenset[str]] = lambda d: frozenset(),
    query_text: str = "",
    holds_code: Callable[[str], bool] = lambda c: True,
) -> dict[str, float]:
    """The features of ``docs[i]`` among the fused documents (best first); ``entity_missing`` says which
    of the query's entities a document never mentions (``entities.missing_in``)."""
    doc = docs[i]
    others = [d for j, d in enumerate(docs) if j != i]

    def sim_of(d: DocHit) -> float:
        return similarity(d.best_distance, max_l2) if d.best_distance is not None else 0.0

    sim = sim_of(doc)
    sim_next = max((sim_of(d) for d in others), default=0.0)
    dense_rank = doc.ranks.get(DENSE_ROUTE)
    bm25_rank = doc.ranks.get(BM25_ROUTE)
    bm25 = doc.scores.get(BM25_ROUTE, 0.0)
    bm25_next = max((d.scores.get(BM25_ROUTE, 0.0) for d in others), default=0.0)
    rrf_next = max((d.rrf for d in others), default=0.0)
    text = text_of(doc).casefold()
    hits = sum(1 for t in terms if t in text)
    name = name_of(doc).casefold()
    name_hits = sum(1 for t in terms if t in name)
    has = terms_of(doc)
    weights = {t: idf(t) for t in terms}
    total = sum(weights.values()) or 1.0
    missing = [w for t, w in weights.items() if t not in has and t not in text]
    # An identifier no runbook of the base holds (a log line's field, an alert no runbook names)
    # tells no document from another; it says the base may lack the answer (``capped``).
    flats = [compact_term(code) for code in codes]
    known = [f for f in flats if holds_code(f)]
    codes_missing = 0
    if known:  # compacting a document's text costs, so only when the query holds identifiers
        flat = compact_term(text + " " + name)
        codes_missing = sum(1 for code in known if code not in flat)
    return {
        "dense_sim_read": sim * read,
        "dense_rank_inv": read / dense_rank if dense_rank else 0.0,
        "bm25_rank_inv": 1.0 / bm25_rank if bm25_rank else 0.0,
        "bm25_per_term": bm25 / max(len(terms), 1),
        "bm25_margin": (bm25 - bm25_next) / bm25 if bm25 > 0 else 0.0,
        "coverage": hits / len(terms) if terms else 0.0,
        "name_coverage": name_hits / len(terms) if terms else 0.0,
        "idf_coverage": sum(w for t, w in weights.items() if t in has or t in text) / total,
        "idf_name_coverage": sum(w for t, w in weights.items() if t in name) / total,
        "idf_missing": max(missing, default=0.0) / max(max_idf, 1e-9),
        "unknown_share": sum(1 for t in terms if unknown(t)) / len(terms) if terms else 0.0,
        "code_missing": codes_missing / len(known) if known else 0.0,
        "code_unknown": (len(flats) - len(known)) / len(flats) if flats else 0.0,
        "dense_margin": (sim - sim_next) * read,
        "bm25_ratio": math.log((bm25 + 1.0) / (bm25_next + 1.0)),
        "agree": float(bm25_rank == 1 and (dense_rank == 1 or read < 0.5)),
        "rrf_margin": (doc.rrf - rrf_next) / doc.rrf if doc.rrf > 0 else 0.0,
        "l0_hit": float(doc.path in l0_paths),
        "l0_multi": float(len(set(l0_paths)) > 1),
        "read": read,
        "title_unmatched": _unmatched(title_terms_of(doc), terms, query_text, idf),
        **_entity_features(entity_missing(doc) if entity_missing else None, holds_code),
    }


def _unmatched(
    title: frozenset[str], terms: Sequence[str], query_text: str, idf: Callable[[str], float]
) -> float:
    """The share of the title's term rarity the query never says. A sibling's title names what
    the query did not ask (``yellow`` for a cluster that is red, ``controller`` for ZooKeeper's
    leader): on the development eval's fit split this feature took the confident share from .54 to
    .57 (English) and .63 to .66 (Chinese) at the same precision and probe share."""
    if not title:
        return 0.0
    said = set(terms)
    stems = {stem(t) for t in terms} - {None}  # ``reload failures`` says the title's ``reloads``
    weights = {t: idf(t) for t in title}
    total = sum(weights.values()) or 1.0
    unsaid = (t for t in title if t not in said and t not in query_text and stem(t) not in stems)
    return sum(weights[t] for t in unsaid) / total


def _entity_features(m: Missing | None, holds_code: Callable[[str], bool]) -> dict[str, float]:
    if m is None:
        return {
            "tech_missing": 0.0,
            "alert_missing": 0.0,
            "alert_unnamed": 0.0,
            "kind_missing": 0.0,
            "tech_in_context": 0.0,
            "alert_unknown": 0.0,
        }
    q = m.of
    share = lambda k, n: k / n if n else 0.0  # noqa: E731
    unknown = sum(1 for a in q.alert_names if not holds_code(a))
    return {
        "tech_missing": share(m.technologies, len(q.technologies)),
        "alert_missing": share(m.alert_names, len(q.alert_names)),
        "alert_unnamed": share(m.unnamed_alerts, len(q.alert_names)),
        "kind_missing": share(m.kinds, len(q.kinds)),
        "tech_in_context": float(m.context_technology),
        "alert_unknown": share(unknown, len(q.alert_names)),
    }


def capped(
    confidence: float, x: dict[str, float], highly: float, reference: float
) -> tuple[float, str | None]:
    """The entity rules: (confidence, the rule that lowered it or None).

    A document that never mentions the query's products is another product's runbook (below
    REFERENCE: not found) — unless the query names them only inside label values (``PVC
    data-kafka-2``: whose volume) and the document names no other product: a platform runbook
    (a volume's, a node's) may answer, but not confidently (below HIGHLY_RELEVANT). A sibling
    alert's runbook, and one without any of the query's identifiers when some are in no runbook,
    stay below HIGHLY_RELEVANT."""
    rule = entity_rule(x)
    if rule is None:
        return confidence, None
    cap = reference if rule == OTHER_TECHNOLOGY and not _whose_product(x) else highly
    if confidence >= cap * CAP_BELOW:
        return cap * CAP_BELOW, rule
    return confidence, None


def entity_rule(x: dict[str, float]) -> str | None:
    """The entity rule whose condition the document meets, whatever its confidence: it never
    mentions the query's products (``OTHER_TECHNOLOGY``), or its alert (``SIBLING_ALERT``), or
    has none of its identifiers while some are in no runbook at all (``UNKNOWN_CODE``: the
    base may lack the answer — the left-out runbook's own alert, a code nobody documented)."""
    if x.get("tech_missing", 0.0) >= 1.0:
        return OTHER_TECHNOLOGY
    # a sibling's runbook lacks the alert *and* every other identifier of the query: one that
    # names the query's error code (ERR_TIMEOUT) is that code's runbook, whatever the alert's name
    # — unless no runbook names the alert at all: then each is at best a neighbour's
    no_code = lacks_every_code(x)
    if x.get("alert_missing", 0.0) >= 1.0 and (no_code or x.get("alert_unknown", 0.0) >= 1.0):
        return SIBLING_ALERT
    if x.get("code_unknown", 0.0) > 0.0 and no_code:
        return UNKNOWN_CODE
    return None


def _whose_product(x: dict[str, float]) -> bool:
    """The query names its products only as whose pod or volume it is (``data-kafka-2``) and the
    document names no other product: a platform runbook may answer (``tech_in_context``)."""
    return x.get("tech_in_context", 0.0) >= 1.0


def ranks_after(x: dict[str, float]) -> bool:
    """Does an entity rule send the document after those it spares (within its level)? Not for
    products named only as whose pod or volume it is (``data-kafka-2``) when the document names
    no other product: there the platform runbook (a volume filling up) is the answer."""
    rule = entity_rule(x)
    return rule is not None and not (rule == OTHER_TECHNOLOGY and _whose_product(x))


def lacks_every_code(x: dict[str, float]) -> bool:
    """The document has none of the query's identifiers (those no runbook holds included)."""
    return x.get("code_unknown", 0.0) >= 1.0 or x.get("code_missing", 1.0) >= 1.0


@dataclass
class Calibration:
    """Standardised logistic regression plus a monotone map from probability to confidence."""

    features: list[str] = field(default_factory=lambda: list(FEATURES))
    mean: list[float] = field(default_factory=lambda: [0.0] * len(FEATURES))
    scale: list[float] = field(default_factory=lambda: [1.0] * len(FEATURES))
    weights: list[float] = field(default_factory=lambda: [0.0] * len(FEATURES))
    bias: float = 0.0
    # (probability, confidence) knots, increasing in both; (0, 0) and (1, 1) are implied.
    knots: list[tuple[float, float]] = field(default_factory=list)
    fitted_on: dict[str, object] = field(default_factory=dict)
    # Second stage (empty: none): [bias, weight of the document's logit, weight of its margin to
    # the best other judged document's logit]. A runbook that stands out from the others is more
    # likely the answer than one among several similar siblings with the same evidence.
    stack: list[float] = field(default_factory=list)

    def logit(self, x: dict[str, float]) -> float:
        z = self.bias
        for name, m, s, w in zip(self.features, self.mean, self.scale, self.weights, strict=True):
            z += w * (x.get(name, 0.0) - m) / s
        return max(min(z, STACK_CLIP), -STACK_CLIP)

    def probability(self, x: dict[str, float]) -> float:
        """The first stage alone (one document, no view of the others)."""
        return _sigmoid(self.logit(x))

    def probabilities(self, xs: Sequence[dict[str, float]]) -> list[float]:
        """The probability of each of a lookup's judged documents (best first), both stages."""
        zs = [self.logit(x) for x in xs]
        if not self.stack:
            return [_sigmoid(z) for z in zs]
        b, wz, wm = self.stack
        return [_sigmoid(b + wz * z + wm * m) for z, m in zip(zs, margins(zs), strict=True)]

    def confidence(self, x: dict[str, float]) -> float:
        return self.to_confidence(self.probability(x))

    def to_confidence(self, p: float) -> float:
        points = [(0.0, 0.0), *self.knots, (1.0, 1.0)]
        for (p0, c0), (p1, c1) in zip(points, points[1:], strict=False):
            if p <= p1:
                return c0 if p1 == p0 else c0 + (c1 - c0) * (p - p0) / (p1 - p0)
        return 1.0

    @classmethod
    def load(cls, path: Path | str = DEFAULT_FILE) -> Calibration:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
        data["knots"] = [tuple(k) for k in data.get("knots", [])]
        cal = cls(**data)
        missing = set(cal.features) - set(FEATURES)
        if missing:
            raise ValueError(f"{path}: unknown features {sorted(missing)}; refit it")
        return cal

    def save(self, path: Path | str = DEFAULT_FILE) -> None:
        Path(path).write_text(
            json.dumps(asdict(self), ensure_ascii=False, indent=1) + "\n", encoding="utf-8"
        )


def fit_logistic(
    rows: Sequence[dict[str, float]],
    labels: Sequence[int],
    *,
    l2: float = 1.0,
    features: Sequence[str] = FEATURES,
    iterations: int = 50,
) -> Calibration:
    """L2-regularised logistic regression by Newton's method on standardised features."""
    x = np.array([[r.get(f, 0.0) for f in features] for r in rows], dtype=float)
    y = np.asarray(labels, dtype=float)
    mean = x.mean(axis=0)
    scale = x.std(axis=0)
    scale[scale < 1e-9] = 1.0
    xs = np.hstack([np.ones((len(x), 1)), (x - mean) / scale])
    w = np.zeros(xs.shape[1])
    penalty = np.full(xs.shape[1], l2)
    penalty[0] = 0.0  # the bias is not shrunk
    for _ in range(iterations):
        p = 1.0 / (1.0 + np.exp(-np.clip(xs @ w, -40, 40)))
        grad = xs.T @ (p - y) + penalty * w
        hess = (xs * (p * (1 - p))[:, None]).T @ xs + np.diag(penalty)
        step = np.linalg.solve(hess, grad)
        w -= step
        if np.abs(step).max() < 1e-8:
            break
    return Calibration(
        features=list(features),
        mean=mean.round(6).tolist(),
        scale=scale.round(6).tolist(),
        weights=w[1:].round(6).tolist(),
        bias=round(float(w[0]), 6),
    )
