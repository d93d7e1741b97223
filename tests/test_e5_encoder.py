"""``E5Encoder`` pads its activation rows once (``padded_rows``) instead of in each linear call:
rows are independent in a linear layer, so the real rows' outputs are the same bit for bit."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F  # noqa: N812

from retrieval.l1.e5_encoder import ROW_BLOCK, Dense, block_rows, padded_rows


def test_padded_rows_are_whole_blocks_and_one_padded_last_block() -> None:
    for rows in range(1, 3 * ROW_BLOCK + 2):
        padded = padded_rows(rows)
        full = rows - rows % ROW_BLOCK
        assert padded >= rows
        assert padded - full == (block_rows(rows - full) if rows > full else 0)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("rows", [1, 14, 17, 64, 65, 300])
def test_rows_padded_once_give_the_outputs_of_rows_padded_per_call(dtype, rows) -> None:  # noqa: ANN001
    g = torch.Generator().manual_seed(rows)
    dense = Dense(torch.randn(96, 48, generator=g), torch.randn(96, generator=g)).to(dtype)
    x = torch.randn(rows, 48, generator=g).to(dtype)
    padded = F.pad(x, (0, 0, 0, padded_rows(rows) - rows))
    padded[rows:] = 7.0  # what padding rows hold after a layer is not zero: it must not matter
    assert torch.equal(dense(padded)[:rows], dense(x))


@pytest.mark.parametrize("rows", [1, 65, 300])
def test_bf16_runs_without_prepacking_on_a_cpu_that_cannot(rows, monkeypatch) -> None:  # noqa: ANN001
    """A CPU without AVX512 BW/VL/DQ cannot prepack bf16 weights (CI's AVX2 machine raised in
    ``_reorder_linear_weight``): the layer keeps its plain weight and gives what it gives here."""
    from retrieval.l1 import e5_encoder

    g = torch.Generator().manual_seed(rows)
    w, b = torch.randn(96, 48, generator=g), torch.randn(96, generator=g)
    x = torch.randn(rows, 48, generator=g).to(torch.bfloat16)
    monkeypatch.setattr(e5_encoder, "_packer", lambda: None)
    plain = Dense(w, b).to(torch.bfloat16)
    assert plain.packed is None and plain.w is not None
    expected = F.linear(x.float(), w.to(torch.bfloat16).float(), b.to(torch.bfloat16).float())
    assert torch.allclose(plain(x).float(), expected, rtol=0.02, atol=0.05)
