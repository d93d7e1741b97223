"""Milvus Lite's gRPC channel stays quiet: no ``GOAWAY … too_many_pings`` in the server log.

pymilvus pings every 10 s even when idle; Milvus Lite's gRPC server tolerates a ping without data
once per 5 minutes, two strikes, then sends GOAWAY (ENHANCE_YOUR_CALM), which gRPC logs at error
level and answers by reconnecting. The store turns keepalive off for the in-process Milvus Lite
(``retrieval/l1/store.py``). A control run with pymilvus' own options shows the lines do appear.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from tests.support.paths import ROOT

# The longest idle spell waited for the control's GOAWAY: it came 60-80 s into one with pymilvus'
# defaults when first measured, 120-130 s on a loaded machine since.
IDLE_S = 180
# The shipped channel idles this much longer than the control needed for its GOAWAY (counted
# from each one's own first idle moment): pymilvus' ping interval, so had the shipped channel
# pinged like the control, one more strike would have come.
MARGIN_S = 10

SCRIPT = """
import sys, time
from langchain_core.embeddings import Embeddings
from retrieval.l1 import milvus_lite, store as store_module
from retrieval.parsing.chunking import Chunk

class Unit(Embeddings):
    def embed_documents(self, texts):
        return [[1.0, 0.0, 0.0, 0.0] for _ in texts]
    def embed_query(self, text):
        return [1.0, 0.0, 0.0, 0.0]

if sys.argv[2] == "pymilvus-defaults":
    milvus_lite.LITE_GRPC_OPTIONS = {}
store = store_module.ChunkStore(sys.argv[1], Unit(), collection="quiet_probe")
chunk = Chunk(0, "Redis", "redis memory is full", 4)
store.add_chunks(doc_id="d1", file_path="x/d1.md", category="x", chunks=[chunk])
assert store.search_bm25("redis", 5)
print("idle", flush=True)
sys.stdin.readline()  # idle until the test says the spell is long enough (or IDLE_S is up)
assert store.count() == 1  # a gRPC call (searches ask the engine): the channel still works
store.close()
print("ok")
"""


class Probe:
    """The script in its own process, its output read as it comes (so the test sees the GOAWAY)."""

    def __init__(self, tmp_path: Path, mode: str) -> None:
        env = {**os.environ, "HF_HUB_OFFLINE": "1"}
        uri = str(tmp_path / f"{mode}.db")
        self.proc = subprocess.Popen(
            [sys.executable, "-c", SCRIPT, uri, mode],
            cwd=ROOT,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.out: list[str] = []
        self.err: list[str] = []
        self.idle_at: float | None = None  # when the script said it idles (monotonic)
        self.goaway_at: float | None = None  # when its log first said too_many_pings
        self._readers = [
            threading.Thread(target=self._read, args=(self.proc.stdout, self.out), daemon=True),
            threading.Thread(target=self._read, args=(self.proc.stderr, self.err), daemon=True),
        ]
        for reader in self._readers:
            reader.start()

    def _read(self, stream, lines: list[str]) -> None:  # noqa: ANN001
        for line in stream:
            lines.append(line)
            if self.idle_at is None and line.strip() == "idle":
                self.idle_at = time.monotonic()
            if self.goaway_at is None and "too_many_pings" in line:
                self.goaway_at = time.monotonic()

    def idled_s(self) -> float:
        return 0.0 if self.idle_at is None else time.monotonic() - self.idle_at

    def finish(self) -> tuple[str, str]:
        """End the idle spell; the script searches once more and exits: (stdout, stderr)."""
        assert self.proc.stdin is not None
        with contextlib.suppress(BrokenPipeError):  # it ended already: its output says why
            self.proc.stdin.write("go\n")
            self.proc.stdin.close()
        try:
            self.proc.wait(timeout=120)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()
        for reader in self._readers:
            reader.join(timeout=30)
        return "".join(self.out), "".join(self.err)


@pytest.mark.slow  # idles until the control's GOAWAY and a margin, in two processes at once
def test_an_idle_milvus_lite_channel_logs_no_goaway(tmp_path: Path) -> None:
    shipped, control = Probe(tmp_path, "shipped"), Probe(tmp_path, "pymilvus-defaults")
    # Both idle from their first search on; the spell ends once the shipped channel has idled
    # MARGIN_S longer than the control (pymilvus' defaults) idled before its GOAWAY: longer than
    # the defaults need to get one.
    deadline = time.monotonic() + IDLE_S + 30  # the start-up (imports, Milvus Lite) is in it too
    while time.monotonic() < deadline and control.proc.poll() is None:
        if control.goaway_at is not None and control.idle_at is not None:
            needed = control.goaway_at - control.idle_at + MARGIN_S
            if shipped.idled_s() >= needed or shipped.proc.poll() is not None:
                break
        time.sleep(0.5)
    out, err = shipped.finish()
    c_out, c_err = control.finish()
    assert shipped.proc.returncode == 0 and out.split() == ["idle", "ok"], err
    assert control.proc.returncode == 0 and c_out.split() == ["idle", "ok"], c_err
    assert "too_many_pings" in c_err, "the control run should reproduce the GOAWAY lines"
    assert "too_many_pings" not in err and "GOAWAY" not in err, err
