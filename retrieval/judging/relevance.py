"""Relevance levels, the dense similarity and the two judges' shared rules. Pure.

FS-1 (see ``docs/spec.md``): Milvus reports the *squared* L2 distance for metric ``L2`` (proved
against the real backend in ``tests/test_milvus_l2.py``). For unit vectors ``d = |a-b|^2 = 2 - 2cos``,
so with ``max_l2 = 2`` the similarity ``1 - d/2`` is exactly the cosine similarity, clamped at 0.
It is always computed, recorded and shown.

FS-2: a score ≥ 0.75 is HIGHLY_RELEVANT, ≥ 0.5 REFERENCE, below that nothing is found. Which score
depends on the judge (``retrieval.relevance.judge``):

* ``calibrated`` (default) — the confidence ``calibration.py`` computes from all the evidence;
* ``dense`` — the dense similarity alone (:func:`judge`). Right for a multilingual model that reads
  every query; misleading for the packaged English-only model on Chinese or identifier queries.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Literal

Judge = Literal["calibrated", "dense"]


class RelevanceLevel(StrEnum):
    PRECISE = "PRECISE"
    HIGHLY_RELEVANT = "HIGHLY_RELEVANT"
    REFERENCE = "REFERENCE"
    NONE = "NONE"  # no valid result; the lookup answers found=false


# Part of the spec: the model reads these verbatim.
COMPLETENESS_HINTS: dict[RelevanceLevel, str] = {
    RelevanceLevel.PRECISE: "知识库中不存在比上述结果更精准的文档",
    RelevanceLevel.HIGHLY_RELEVANT: "当前结果已高度相关，继续检索不太可能找到更精准的文档",
    RelevanceLevel.REFERENCE: "当前结果为相关参考，如需更精准信息请明确缺少的具体维度",
}


@dataclass(frozen=True)
class Thresholds:
    max_l2_distance: float = 2.0
    highly_relevant: float = 0.75
    reference: float = 0.5

    @classmethod
    def from_settings(cls, normalization: object) -> Thresholds:
        return cls(
            max_l2_distance=normalization.max_l2_distance,  # type: ignore[attr-defined]
            highly_relevant=normalization.highly_relevant_threshold,  # type: ignore[attr-defined]
            reference=normalization.reference_threshold,  # type: ignore[attr-defined]
        )


def similarity(distance: float, max_l2: float = 2.0) -> float:
    """FS-1: ``1 - min(d, max_l2) / max_l2``; negative distances (float noise) count as 0."""
    d = min(max(distance, 0.0), max_l2)
    return 1.0 - d / max_l2


def level_for(score: float | None, t: Thresholds = Thresholds()) -> RelevanceLevel:
    """FS-2 applied to a score in [0, 1] (a similarity or a confidence)."""
    if score is None:
        return RelevanceLevel.NONE
    if score >= t.highly_relevant:
        return RelevanceLevel.HIGHLY_RELEVANT
    if score >= t.reference:
        return RelevanceLevel.REFERENCE
    return RelevanceLevel.NONE


@dataclass(frozen=True)
class Judgement:
    level: RelevanceLevel
    found: bool
    similarity: float | None

    @property
    def completeness_hint(self) -> str | None:
        return COMPLETENESS_HINTS.get(self.level)


def judge(l0_count: int, top_distance: float | None, t: Thresholds = Thresholds()) -> Judgement:
    """The ``dense`` judge: exactly one L0 match is PRECISE; otherwise the best dense similarity.

    ``top_distance`` is the best dense distance among the results (``None`` when L1 found nothing
    or was skipped). With several L0 matches but no valid L1 hit the lookup is still found (the L0
    matches are the answer) and judged REFERENCE.
    """
    sim = similarity(top_distance, t.max_l2_distance) if top_distance is not None else None
    if l0_count == 1:
        return Judgement(RelevanceLevel.PRECISE, True, sim)
    level = level_for(sim, t)
    if level is RelevanceLevel.NONE and l0_count > 1:
        level = RelevanceLevel.REFERENCE
    return Judgement(level, level is not RelevanceLevel.NONE, sim)
