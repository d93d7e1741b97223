"""The unigram segmentation of ``e5_tokenizer.py``, in pure Python (pure logic, no I/O).

The semantics are HF ``tokenizers``' Unigram model (``encode_optimized``), which the tokenizer used
before: at each start position, in ascending order, every piece the text continues with is a
candidate ending where it ends, scored by the sum (float64) of the pieces' float32 scores; a later
candidate replaces the best path to a position only when strictly greater (ties: the earliest start
wins); where no one-character piece starts, an ``<unk>`` of one character scores min score − 10.
Unlike HF, a run of unknown characters gives one ``<unk>`` each (the engine's output).

Speed: candidates are substring lookups in a dict, their lengths bounded by the longest piece
starting with the same two or three characters. No piece holds the metaspace ``▁`` past its first character (checked
at load), so every ``▁`` starts a token and the segmentation of a text is the segmentations of its
``▁``-words put end to end — exactly, as the sums are exact: every score is a multiple of 2**-22
(checked at load) below 2**5 in magnitude, so sums stay exact in float64 far past any text's size.
Words repeat, so they are cached (LRU); a word longer than ``CACHED_WORD`` is computed each time.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from functools import lru_cache

META = "\u2581"
UNK_PENALTY = 10.0  # HF's K_UNK_PENALTY
CACHED_WORD = 64  # characters
CACHE_WORDS = 1 << 15

Segment = tuple[tuple[int, ...], tuple[int, ...]]  # (ids, end offsets within the word)


def scores_sum_exactly(scores: Sequence[float], terms: int = 1 << 24) -> bool:
    """True if any sum of ``terms`` of these scores (and the unknown score) is exact in float64."""
    finest = min((math.frexp(s)[1] - 24 for s in scores if s), default=0)  # f32: 24-bit mantissa
    largest = max((abs(s) for s in scores), default=0.0) + UNK_PENALTY
    return largest * terms < 2.0 ** (53 + finest)


class Segmenter:
    def __init__(self, pieces: Sequence[str], scores: Sequence[float], unk: int) -> None:
        self.piece_ids: dict[str, int] = {p: i for i, p in enumerate(pieces)}
        self.scores = list(scores)
        self.unk = unk
        self.unk_score = min(self.scores) - UNK_PENALTY
        # The longest piece per first two and per first three characters (28k and 48k prefixes):
        # bounds the lengths looked up at a position.
        longest: dict[str, int] = {}
        for p in pieces:
            for k in (2, 3):
                if len(p) > longest.get(p[:k], k - 1):
                    longest[p[:k]] = len(p)
        self.longest = longest
        # Words are exact units only if no piece spans a ``▁`` it does not start with.
        self.by_words = scores_sum_exactly(self.scores) and not any(META in p[1:] for p in pieces)
        self._cached = lru_cache(maxsize=CACHE_WORDS)(self._viterbi)

    def forget_words(self) -> None:
        self._cached.cache_clear()

    @property
    def cached_words(self) -> int:
        return self._cached.cache_info().currsize

    def _viterbi(self, s: str) -> Segment:
        n = len(s)
        get, scores, longest, unk = self.piece_ids.get, self.scores, self.longest.get, self.unk
        unk_score = self.unk_score
        best = [-math.inf] * (n + 1)
        best[0] = 0.0
        back = [0] * (n + 1)
        tok = [unk] * (n + 1)
        for i in range(n):
            base = best[i]
            single = False
            m = longest(s[i : i + 2], 1)
            if m > 2:
                m = longest(s[i : i + 3], 2)
            for j in range(i + 1, min(n, i + m) + 1):
                pid = get(s[i:j])
                if pid is None or pid == unk:
                    continue
                c = base + scores[pid]
                if c > best[j]:
                    best[j], back[j], tok[j] = c, i, pid
                if j == i + 1:
                    single = True
            if not single:
                c = base + unk_score
                if c > best[i + 1]:
                    best[i + 1], back[i + 1], tok[i + 1] = c, i, unk
        ids: list[int] = []
        ends: list[int] = []
        j = n
        while j > 0:
            ids.append(tok[j])
            ends.append(j)
            j = back[j]
        return tuple(reversed(ids)), tuple(reversed(ends))

    def _segment(self, word: str) -> Segment:
        return self._cached(word) if len(word) <= CACHED_WORD else self._viterbi(word)

    def _words(self, s: str) -> list[str]:
        if not self.by_words:
            return [s]
        parts = s.split(META)
        words = [META + p for p in parts[1:]]
        return [parts[0], *words] if parts[0] else words

    def ids(self, s: str) -> list[int]:
        out: list[int] = []
        for w in self._words(s):
            out += self._segment(w)[0]
        return out

    def spans(self, s: str) -> tuple[list[int], list[tuple[int, int]]]:
        """Ids and each token's ``[a, b)`` span in ``s``."""
        ids: list[int] = []
        spans: list[tuple[int, int]] = []
        at = 0
        for w in self._words(s):
            wids, ends = self._segment(w)
            ids += wids
            start = at
            for e in ends:
                spans.append((start, at + e))
                start = at + e
            at += len(w)
        return ids, spans
