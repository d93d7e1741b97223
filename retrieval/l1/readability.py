"""How much of a query the embedding model can read, in [0, 1]. Pure (the tokenizer is passed in).

The dense route's vote is weighted by this share, so a route that cannot read the query gets no
vote: the packaged English MiniLM maps almost every Chinese character to ``[UNK]`` (its vocabulary
holds 244 CJK characters out of 30,522 entries), so a Chinese question is noise to it while BM25
(jieba) reads it well.

A character counts as read when its script is one the model's vocabulary really covers and the
tokenizer did not turn it into the unknown token. Script coverage is measured once from the
vocabulary: a script with fewer than ``MIN_SCRIPT_TOKENS`` vocabulary entries is not read, even if
a few of its characters happen to be in the vocabulary.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable
from typing import Any, Protocol

from retrieval.parsing.textnorm import script_of

MIN_SCRIPT_TOKENS = 1000
ALL_SCRIPTS = "all"


class Readability(Protocol):
    def __call__(self, text: str) -> float: ...


def _letters(text: str) -> list[int]:
    return [i for i, ch in enumerate(text) if ch.isalnum()]


class ScriptReadability:
    """For a model known only by the scripts it reads (a hosted endpoint): ``{"latin", "cjk"}``
    or ``"all"`` for a multilingual model such as BGE-M3."""

    def __init__(self, scripts: Iterable[str] | str = ALL_SCRIPTS) -> None:
        self.all = scripts == ALL_SCRIPTS
        self.scripts = frozenset() if self.all else frozenset(scripts) | {"digit"}

    def __call__(self, text: str) -> float:
        idx = _letters(text)
        if not idx or self.all:
            return 1.0 if idx or self.all else 0.0
        return sum(1 for i in idx if script_of(text[i]) in self.scripts) / len(idx)


def vocabulary_scripts(vocab: Iterable[str], minimum: int = MIN_SCRIPT_TOKENS) -> frozenset[str]:
    """Scripts with at least ``minimum`` vocabulary entries (word pieces' ``##`` ignored)."""
    counts: Counter[str] = Counter()
    for token in vocab:
        piece = token.removeprefix("##").removeprefix("▁").removeprefix("Ġ")
        first = next((ch for ch in piece if ch.isalnum()), None)
        if first is not None:
            counts[script_of(first)] += 1
    return frozenset(s for s, n in counts.items() if n >= minimum) | {"digit"}


class TokenizerReadability:
    """For a local model: its own tokenizer decides (needs a fast tokenizer with offsets)."""

    def __init__(self, tokenizer: Any, scripts: frozenset[str] | None = None) -> None:
        self.tokenizer = tokenizer
        self.scripts = scripts if scripts is not None else vocabulary_scripts(tokenizer.get_vocab())
        self.unk_id = tokenizer.unk_token_id

    def unknown_spans(self, text: str) -> list[tuple[int, int]]:
        enc = self.tokenizer(
            text, add_special_tokens=False, return_offsets_mapping=True, verbose=False
        )
        return [
            span
            for tid, span in zip(enc["input_ids"], enc["offset_mapping"], strict=True)
            if tid == self.unk_id
        ]

    def __call__(self, text: str) -> float:
        idx = _letters(text)
        if not idx:
            return 0.0
        unknown = set()
        for start, end in self.unknown_spans(text):
            unknown.update(range(start, end))
        read = sum(1 for i in idx if i not in unknown and script_of(text[i]) in self.scripts)
        return read / len(idx)


def make_readability(
    tokenizer: Any | None, scripts: Iterable[str] | str | None
) -> Callable[[str], float]:
    """Explicit scripts win; else the local tokenizer; else assume the model reads everything."""
    if scripts is not None and scripts != "auto":
        return ScriptReadability(scripts)
    if tokenizer is not None and getattr(tokenizer, "is_fast", False):
        return TokenizerReadability(tokenizer)
    return ScriptReadability(ALL_SCRIPTS)
