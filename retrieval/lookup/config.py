"""The lookup's configuration, its outcome and the de-duplication reasons (``lookup.py`` uses them)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from retrieval.judging.calibration import Calibration
from retrieval.judging.relevance import Thresholds
from retrieval.lookup.memory import SessionMemory


class DedupReason:
    DOC = "doc_retrieved"  # every matching document was already returned this session
    DOMAIN = "domain_retrieved"  # the domain has nothing left that was not returned
    BUDGET = "budget_exhausted"  # the session's lookup budget is spent; nothing was searched


@dataclass
class LookupConfig:
    thresholds: Thresholds = field(default_factory=Thresholds)
    judge: str = "calibrated"  # or "dense": the dense similarity alone
    calibration: Calibration | None = None  # None: the packaged retrieval/judging/calibration.json
    top_k: int = 4  # documents shown: the primary and up to top_k − 1 supplements
    candidates: int = 40  # chunks fetched per route
    rrf_k: int = 60
    dense_weight: float = 1.0
    bm25_weight: float = 1.0
    l0_weight: float = 1.0
    budget: int = 8
    primary_chars: int = 1600
    supplement_chars: int = 600
    # A supplement needs some evidence of its own: on the development eval (e5, the judge fitted
    # with leave-one-out lookups) a confidence floor of 0.01 drops a quarter of the unrelated
    # supplements without losing one right document from ranks 2–4 (0.02 lost one).
    supplement_floor: float = 0.01

    @classmethod
    def from_settings(cls, r: Any) -> LookupConfig:
        cal_file = r.relevance.calibration_file
        return cls(
            thresholds=Thresholds.from_settings(r.normalization),
            judge=r.relevance.judge,
            calibration=Calibration.load(cal_file) if cal_file else Calibration.load(),
            top_k=r.top_k,
            candidates=r.candidates,
            rrf_k=r.rrf_k,
            dense_weight=r.dense_weight,
            bm25_weight=r.bm25_weight,
            l0_weight=r.l0_weight,
            budget=r.session_lookup_budget,
        )


@dataclass
class LookupOutcome:
    payload: dict[str, Any]  # model-facing
    artifact: dict[str, Any]  # raw scores for the records
    memory: SessionMemory  # the session memory after this lookup
    served: dict[str, list[str]]  # domain → paths whose content this lookup returned
