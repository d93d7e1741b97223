"""Cheap, language-agnostic text overlap (English words + CJK bigrams). Pure."""

from __future__ import annotations

import re


def bigrams(text: str) -> set[str]:
    """Lower-cased English words and CJK character bigrams: a cheap, language-agnostic overlap."""
    low = text.lower()
    grams = set(re.findall(r"[a-z0-9_]{2,}", low))
    for run in re.findall(r"[\u4e00-\u9fff]+", low):
        grams.update(run[i : i + 2] for i in range(len(run) - 1))
    return grams


def overlap(text: str, query_grams: set[str]) -> float:
    grams = bigrams(text)
    return len(grams & query_grams) / (1 + len(grams) ** 0.5) if grams else 0.0
