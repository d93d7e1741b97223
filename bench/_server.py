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
START_TIMEOUT_S = 600  # a first start on a busy 2-core machine
# The few shipped runbooks a smoke run (``--smoke``) imports instead of all of them.
SMOKE_RUNBOOKS = (
    "api/payment-errors.md",
    "infrastructure/mysql-connection-pool.md",
    "cache/redis-memory-full.md",
)


def copy_runbooks(dest: Path, only: tuple[str, ...] | None = None) -> Path:
    """``dest`` holding the shipped ``knowledge_base/`` (or only the runbooks ``only`` names)."""
    if only is None:
        shutil.copytree(ROOT / "knowledge_base", dest)
        return dest
    for rel in only:
        (dest / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / "knowledge_base" / rel, dest / rel)
    return dest


_VENV_PYTHON = ROOT / ".venv" / "bin" / "python"
PYTHON = str(_VENV_PYTHON) if _VENV_PYTHON.exists() else sys.executable

# ``python -m server`` with ``root``'s code first on the path: ``PYTHONPATH`` alone does not
# decide, a venv's ``.pth`` files may put another checkout ahead of it (``/work/wt/mkvenv.sh``'s
# venvs put their worktree first, so ``--rev`` measured the working tree twice).
CODE_FIRST = "import runpy, sys; sys.path.insert(0, sys.argv.pop(1))"  # argv[1]: the code root
RUN_SERVER = f"{CODE_FIRST}; runpy.run_module('server', run_name='__main__', alter_sys=True)"

# Settings that would point the server at someone's real stores or model.
SCRUBBED = ("DATABASE_URL", "MILVUS_URI", "API_KEY", "LLM_", "OPENAI_", "PROMETHEUS_", "LOKI_")


@dataclass
class BenchServer:
    base_url: str
    proc: subprocess.Popen[bytes]
    ready_s: float = 0.0  # from the process' start to /healthz "ok" (first import included)

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


def start_server(
    work: Path,
    *,
    runbooks: tuple[str, ...] | None = None,
    root: Path = ROOT,
    poll_s: float = 0.5,
    **env_overrides: str,
) -> BenchServer:
    """The server on the embedded defaults, all its state under ``work``; returns once healthy
    (``/healthz`` says ``ok``: the first import of the runbooks is done). ``root``: the tree
    whose code runs (another revision's, for a before/after), with this checkout's venv."""
    kb = work / "knowledge_base"
    if not kb.exists():
        copy_runbooks(kb, runbooks)
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
        PYTHONPATH=str(root),
        **env_overrides,
    )
    log_path = work / "server.log"
    started = time.monotonic()
    with log_path.open("ab") as log:
        proc = subprocess.Popen(
            [PYTHON, "-c", RUN_SERVER, str(root)],
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
                    server.ready_s = round(time.monotonic() - started, 2)
                    return server
            except (httpx.HTTPError, ValueError):
                pass
            time.sleep(poll_s)
        raise RuntimeError(f"server not healthy after {START_TIMEOUT_S}s; see {log_path}")
    except BaseException:
        server.stop()
        raise
