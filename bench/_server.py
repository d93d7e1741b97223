"""One ``python -m server`` process for the server-level benchmarks (``bench_http``, ``bench_sessions``).

The benchmarks are scripts, independent of the test suite (they never import ``tests``): this is
the little they need — a private working folder with a copy of the shipped ``knowledge_base/``, a
free port, wait for ``/healthz``, stop by the process group.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
START_TIMEOUT_S = 240
# Settings that would point the server at someone's real stores or model.
SCRUBBED = ("DATABASE_URL", "MILVUS_URI", "API_KEY", "LLM_", "OPENAI_", "PROMETHEUS_", "LOKI_")


@dataclass
class BenchServer:
    base_url: str
    proc: subprocess.Popen[bytes]

    def stop(self) -> None:
        if self.proc.poll() is not None:
            return
        os.killpg(self.proc.pid, signal.SIGTERM)
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(work: Path, **env_overrides: str) -> BenchServer:
    """The server on the embedded defaults, all its state under ``work``; returns once healthy."""
    kb = work / "knowledge_base"
    if not kb.exists():
        shutil.copytree(ROOT / "knowledge_base", kb)
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(SCRUBBED)}
    env.update(
        DATABASE_URL=f"sqlite+aiosqlite:///{work / 'bench.db'}",
        MILVUS_URI=str(work / "milvus.db"),
        KNOWLEDGE_BASE_DIR=str(kb),
        DATA_DIR=str(work),
        CONFIG_FILE=str(work / "absent-config.yaml"),
        PORT=str(port),
        HF_HUB_OFFLINE="1",
        TRANSFORMERS_OFFLINE="1",
        PYTHONPATH=str(ROOT),
        **env_overrides,
    )
    venv_python = ROOT / ".venv" / "bin" / "python"
    python = str(venv_python) if venv_python.exists() else sys.executable
    log_path = work / "server.log"
    with log_path.open("ab") as log:
        proc = subprocess.Popen(
            [python, "-m", "server"],
            cwd=work,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    server = BenchServer(f"http://127.0.0.1:{port}", proc)
    deadline = time.monotonic() + START_TIMEOUT_S
    try:
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise RuntimeError(f"server exited with {proc.returncode}; see {log_path}")
            try:
                if httpx.get(f"{server.base_url}/healthz", timeout=2).json().get("status") == "ok":
                    return server
            except (httpx.HTTPError, ValueError):
                pass
            time.sleep(0.5)
        raise RuntimeError(f"server not healthy after {START_TIMEOUT_S}s; see {log_path}")
    except BaseException:
        server.stop()
        raise
