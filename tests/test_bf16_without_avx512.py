"""On a CPU whose oneDNN cannot run bf16 (no AVX512 BW/VL/DQ nor AVX-NE-CONVERT), the default
model still loads and embeds: ``auto`` picks fp32 and an explicit ``bf16`` runs unpacked.

CI once ran on such a machine (AVX2) and every explicit bf16 load crashed in oneDNN's weight
prepacking. ``ONEDNN_MAX_CPU_ISA=AVX2`` makes any machine answer as that one did, so this runs in
a child process with it set (oneDNN reads it once, at its first use).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

CHILD = """
import json, numpy as np, torch
from retrieval.l1.e5_local import E5Embeddings
from retrieval.l1.embeddings import cpu_has_native_bf16
texts = ["Redis OOM command not allowed", "数据库连接池满了怎么办"]
auto = E5Embeddings(precision="auto", workers=1)
a = np.asarray(auto.embed_documents(texts))
bf16 = E5Embeddings(precision="bf16", workers=1)
bf16._file, bf16._tokenizer = auto.file, auto.tokenizer
b = np.asarray(bf16.embed_documents(texts))
print(json.dumps({
    "onednn_bf16": bool(torch.ops.mkldnn._is_mkldnn_bf16_supported()),
    "native": cpu_has_native_bf16(),
    "auto": auto.precision, "bf16": bf16.precision,
    "min_cosine": float((a * b).sum(axis=1).min()),
}))
"""


def test_a_cpu_without_onednn_bf16_embeds_in_fp32_and_in_unpacked_bf16(tmp_path: Path) -> None:
    env = {
        **os.environ,
        "ONEDNN_MAX_CPU_ISA": "AVX2",
        "HF_HUB_OFFLINE": "1",
        "SUPERBIZ_CACHE_DIR": str(tmp_path / "cache"),  # the bf16 verdict of this run only
        "PYTHONPATH": str(ROOT),
    }
    out = subprocess.run(
        [sys.executable, "-c", CHILD],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    seen = json.loads(out.stdout.strip().splitlines()[-1])
    assert seen["onednn_bf16"] is False and seen["native"] is False
    assert (seen["auto"], seen["bf16"]) == ("fp32", "bf16")
    assert seen["min_cosine"] > 0.999
