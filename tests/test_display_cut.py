"""Displayed scores are cut, never rounded, so they never cross a threshold their value is under:
a confidence of 0.7499 beside REFERENCE must not read 0.75 (HIGHLY_RELEVANT's threshold)."""

from __future__ import annotations

import pytest

from retrieval.__main__ import _print_lookup, cut


@pytest.mark.parametrize(
    ("value", "digits", "shown"),
    [
        (0.7499, 2, "0.74"),
        (0.75, 2, "0.75"),
        (0.29, 2, "0.29"),
        (0.4999999, 3, "0.499"),
        (1.0, 2, "1.00"),
    ],
)
def test_cut(value: float, digits: int, shown: str) -> None:
    assert cut(value, digits) == shown


class _Outcome:
    payload = {
        "found": True,
        "relevanceLevel": "REFERENCE",
        "completenessHint": "",
        "message": "",
        "primary": None,
        "supplement": [],
    }
    artifact = {
        "layer": "L1",
        "dedup_reason": None,
        "l0_titles": [],
        "documents": [
            {
                "source": "cache/redis.md",
                "level": "REFERENCE",
                "confidence": 0.7499,
                "dense_similarity": 0.81996,
                "bm25_score": 3.999,
                "ranks": {},
                "shown": True,
            }
        ],
        "timings_ms": {},
    }


def test_the_cli_table_does_not_round_a_confidence_up_to_the_next_level(capsys) -> None:  # noqa: ANN001
    _print_lookup(_Outcome(), as_json=False)
    row = next(line for line in capsys.readouterr().out.splitlines() if "cache/redis.md" in line)
    assert " 0.74 " in row and "0.75" not in row and "0.819" in row and "3.99" in row, row
