"""FS-1 / FS-2: turn a dense L2 distance into a similarity and a relevance level. Pure.

Milvus reports the *squared* L2 distance for metric ``L2`` (proved against the real backend in
``tests/test_milvus_l2.py``). For unit vectors ``d = |a-b|^2 = 2 - 2cos``, so with ``max_l2 = 2``
the FS-1 similarity ``1 - d/2`` is exactly the cosine similarity, clamped at 0.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


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


@dataclass(frozen=True)
class Judgement:
    level: RelevanceLevel
    found: bool
    similarity: float | None

    @property
    def completeness_hint(self) -> str | None:
        return COMPLETENESS_HINTS.get(self.level)


def judge(l0_count: int, top_distance: float | None, t: Thresholds = Thresholds()) -> Judgement:
    """FS-2: exactly one L0 match is PRECISE; otherwise the best dense similarity decides.

    ``top_distance`` is the dense route's best distance (``None`` when L1 found nothing or was
    skipped). With several L0 matches but no valid L1 hit the lookup is still found (the L0 matches
    are the answer) and judged REFERENCE.
    """
    if l0_count == 1:
        sim = similarity(top_distance, t.max_l2_distance) if top_distance is not None else None
        return Judgement(RelevanceLevel.PRECISE, True, sim)
    sim = similarity(top_distance, t.max_l2_distance) if top_distance is not None else None
    if sim is not None and sim >= t.highly_relevant:
        return Judgement(RelevanceLevel.HIGHLY_RELEVANT, True, sim)
    if sim is not None and sim >= t.reference:
        return Judgement(RelevanceLevel.REFERENCE, True, sim)
    if l0_count > 1:
        return Judgement(RelevanceLevel.REFERENCE, True, sim)
    return Judgement(RelevanceLevel.NONE, False, sim)


def is_valid_hit(distance: float, t: Thresholds = Thresholds()) -> bool:
    """An L1 hit below the reference threshold is not a valid result and is not shown."""
    return similarity(distance, t.max_l2_distance) >= t.reference
