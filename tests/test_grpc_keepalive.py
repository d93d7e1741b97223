"""Milvus Lite's gRPC channel stays quiet: no ``GOAWAY … too_many_pings`` in the server log.

pymilvus pings every 10 s even when idle; Milvus Lite's gRPC server tolerates a ping without data
once per 5 minutes, two strikes, then sends GOAWAY (ENHANCE_YOUR_CALM), which gRPC logs at error
level and answers by reconnecting. The store turns keepalive off for the in-process Milvus Lite
(``retrieval/l1/store.py``). A control run with pymilvus' own options shows the lines do appear.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.paths import ROOT

IDLE_S = 120  # measured: the GOAWAY comes 60-80 s into an idle spell with pymilvus defaults

SCRIPT = """
import sys, time
from langchain_core.embeddings import Embeddings
from retrieval.l1 import store as store_module
from retrieval.parsing.chunking import Chunk

class Unit(Embeddings):
    def embed_documents(self, texts):
        return [[1.0, 0.0, 0.0, 0.0] for _ in texts]
    def embed_query(self, text):
        return [1.0, 0.0, 0.0, 0.0]

if sys.argv[2] == "pymilvus-defaults":
    store_module.LITE_GRPC_OPTIONS = {}
store = store_module.ChunkStore(sys.argv[1], Unit(), collection="quiet_probe")
chunk = Chunk(0, "Redis", "redis memory is full", 4)
store.add_chunks(doc_id="d1", file_path="x/d1.md", category="x", chunks=[chunk])
assert store.search_bm25("redis", 5)
time.sleep(float(sys.argv[3]))
assert store.search_bm25("redis", 5)  # the channel still works after the idle time
store.close()
print("ok")
"""


def _start(tmp_path: Path, mode: str) -> subprocess.Popen[str]:
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    uri = str(tmp_path / f"{mode}.db")
    return subprocess.Popen(
        [sys.executable, "-c", SCRIPT, uri, mode, str(IDLE_S)],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


@pytest.mark.slow  # idles 2 minutes, in two processes at once
def test_an_idle_milvus_lite_channel_logs_no_goaway(tmp_path: Path) -> None:
    shipped, control = _start(tmp_path, "shipped"), _start(tmp_path, "pymilvus-defaults")
    out, err = shipped.communicate(timeout=IDLE_S + 120)
    c_out, c_err = control.communicate(timeout=IDLE_S + 120)
    assert shipped.returncode == 0 and out.strip() == "ok", err
    assert control.returncode == 0 and c_out.strip() == "ok", c_err
    assert "too_many_pings" in c_err, "the control run should reproduce the GOAWAY lines"
    assert "too_many_pings" not in err and "GOAWAY" not in err, err
