"""Helpers for the browser tests: the system Chromium, a real server subprocess, free ports.

The browser is Debian's Chromium (``apt-get install chromium``), driven by the Playwright Python
package; Playwright's own browser downloads (``playwright install``) are never used.
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

from tests.conftest import ROOT

CHROMIUM = Path(os.environ.get("CHROMIUM_PATH", "/usr/bin/chromium"))
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
MISSING_CHROMIUM = (
    f"browser tests need Debian's Chromium at {CHROMIUM}: run `apt-get install -y chromium` "
    "(never `playwright install`)"
)
MISSING_PLAYWRIGHT = (
    "browser tests need the Playwright Python package: pip install -e '.[test]' "
    "(it drives the system Chromium; no browser download)"
)
START_TIMEOUT_S = 240


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def python_bin() -> str:
    venv = ROOT / ".venv" / "bin" / "python"
    return str(venv) if venv.exists() else sys.executable


@dataclass
class Server:
    base_url: str
    proc: subprocess.Popen[bytes]
    log_path: Path
    work: Path

    def log_tail(self, n: int = 60) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-n:])
        except OSError:
            return "(no log)"

    def stop(self) -> None:
        """Stop the server by its PID (it leads its own process group)."""
        if self.proc.poll() is not None:
            return
        os.killpg(self.proc.pid, signal.SIGTERM)
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()


def start_server(work: Path) -> Server:
    """``python -m server`` on a free port over a private copy of the sample knowledge base.

    The first start ingests ``knowledge_base/`` (about 15 s with the packaged embedding model)."""
    kb = work / "knowledge_base"
    if not kb.exists():
        shutil.copytree(ROOT / "knowledge_base", kb)
    port = free_port()
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(
            ("DATABASE_URL", "MILVUS_URI", "API_KEY", "LLM_", "OPENAI_", "PROMETHEUS_", "LOKI_")
        )
    }
    env.update(
        DATABASE_URL=f"sqlite+aiosqlite:///{work / 'kb.db'}",
        MILVUS_URI=str(work / "milvus.db"),
        KNOWLEDGE_BASE_DIR=str(kb),
        DATA_DIR=str(work),
        CONFIG_FILE=str(work / "absent-config.yaml"),  # a developer's config.yaml must not leak in
        HOST="127.0.0.1",
        PORT=str(port),
        HF_HUB_OFFLINE="1",
        TRANSFORMERS_OFFLINE="1",
        PYTHONPATH=str(ROOT) + os.pathsep + env.get("PYTHONPATH", ""),
    )
    log_path = work / "server.log"
    log = log_path.open("wb")
    proc = subprocess.Popen(
        [python_bin(), "-m", "server"],
        cwd=work,  # keeps a developer's .env out, and ./data inside the temp dir
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    log.close()  # the child holds its own descriptor
    server = Server(f"http://127.0.0.1:{port}", proc, log_path, work)
    deadline = time.monotonic() + START_TIMEOUT_S
    try:
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise RuntimeError(f"server exited with {proc.returncode}:\n{server.log_tail()}")
            try:
                r = httpx.get(f"{server.base_url}/healthz", timeout=2)
                if r.status_code == 200 and r.json().get("status") == "ok":
                    return server
            except httpx.HTTPError:
                pass
            time.sleep(0.5)
        raise RuntimeError(f"server not healthy after {START_TIMEOUT_S}s:\n{server.log_tail()}")
    except BaseException:
        server.stop()
        raise
