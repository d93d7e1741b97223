"""FS-1 / FS-2 acceptance cases, pure."""

from pathlib import Path

import pytest

from retrieval.judging.relevance import (
    COMPLETENESS_HINTS,
    RelevanceLevel,
    Thresholds,
    judge,
    similarity,
)
from settings import load_settings


@pytest.mark.parametrize(("score", "sim"), [(0.0, 1.0), (1.0, 0.5), (2.0, 0.0), (3.0, 0.0)])
def test_fs1_similarity(score: float, sim: float) -> None:
    assert similarity(score, 2.0) == pytest.approx(sim)


def _d(sim: float) -> float:
    """The squared-L2 distance that has this similarity under max_l2 = 2."""
    return (1 - sim) * 2.0


@pytest.mark.parametrize(
    ("l0", "sim", "level", "found"),
    [
        (1, None, RelevanceLevel.PRECISE, True),
        (1, 0.1, RelevanceLevel.PRECISE, True),
        (2, 0.8, RelevanceLevel.HIGHLY_RELEVANT, True),
        (0, 0.8, RelevanceLevel.HIGHLY_RELEVANT, True),
        (3, 0.6, RelevanceLevel.REFERENCE, True),
        (0, 0.4, RelevanceLevel.NONE, False),
        (0, None, RelevanceLevel.NONE, False),
        (0, 0.75, RelevanceLevel.HIGHLY_RELEVANT, True),
        (0, 0.5, RelevanceLevel.REFERENCE, True),
    ],
)
def test_fs2_levels(l0: int, sim: float | None, level: RelevanceLevel, found: bool) -> None:
    j = judge(l0, None if sim is None else _d(sim))
    assert (j.level, j.found) == (level, found)


def test_completeness_hints_are_the_spec_texts() -> None:
    assert COMPLETENESS_HINTS[RelevanceLevel.PRECISE] == "知识库中不存在比上述结果更精准的文档"
    assert (
        COMPLETENESS_HINTS[RelevanceLevel.HIGHLY_RELEVANT]
        == "当前结果已高度相关，继续检索不太可能找到更精准的文档"
    )
    assert (
        COMPLETENESS_HINTS[RelevanceLevel.REFERENCE]
        == "当前结果为相关参考，如需更精准信息请明确缺少的具体维度"
    )
    assert judge(1, None).completeness_hint == COMPLETENESS_HINTS[RelevanceLevel.PRECISE]


def test_thresholds_from_config_yaml_change_the_outcome(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    distance = _d(0.8)  # HIGHLY_RELEVANT under the defaults
    assert judge(
        0, distance, Thresholds.from_settings(load_settings().retrieval.normalization)
    ).level == (RelevanceLevel.HIGHLY_RELEVANT)
    cfg = tmp_path / "config.yaml"
    cfg.write_text(
        "retrieval:\n  normalization:\n    highly-relevant-threshold: 0.9\n    reference-threshold: 0.85\n",
        encoding="utf-8",
    )
    monkeypatch.setenv("CONFIG_FILE", str(cfg))
    t = Thresholds.from_settings(load_settings().retrieval.normalization)
    assert judge(0, distance, t).found is False
    cfg.write_text("retrieval:\n  normalization:\n    max-l2-distance: 4.0\n", encoding="utf-8")
    t = Thresholds.from_settings(load_settings().retrieval.normalization)
    # Same distance, wider scale: similarity 1 - 0.4/4 = 0.9.
    assert judge(0, distance, t).similarity == pytest.approx(0.9)
