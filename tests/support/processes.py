"""Real processes for tests: the server (``python -m server``) and a Milvus Lite server, each started
on a free port and stopped by its PID (every child leads its own process group).

A server works in the folder it is given (its database, Milvus Lite file, log and a copy of the
fixture runbooks), never in the checkout."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import httpx

from tests.support.kb import copy_fixture_kb
from tests.support.paths import ROOT

START_TIMEOUT_S = 240
SCRUBBED = ("DATABASE_URL", "MILVUS_URI", "API_KEY", "LLM_", "OPENAI_", "PROMETHEUS_", "LOKI_")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def python_bin() -> str:
    venv = ROOT / ".venv" / "bin" / "python"
    return str(venv) if venv.exists() else sys.executable


def stop_process(proc: subprocess.Popen[bytes], timeout: float = 30) -> None:
    if proc.poll() is not None:
        return
    os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def _spawn(
    args: list[str], cwd: Path, env: dict[str, str], log_path: Path
) -> subprocess.Popen[bytes]:
    with log_path.open("ab") as log:
        return subprocess.Popen(
            args, cwd=cwd, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )


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
        stop_process(self.proc)


def server_env(work: Path, port: int, **overrides: str) -> dict[str, str]:
    kb = copy_fixture_kb(work / "knowledge_base")
    env = {k: v for k, v in os.environ.items() if not k.startswith(SCRUBBED)}
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
        PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""),
    )
    env.update(overrides)
    return env


def start_server(
    work: Path, *, name: str = "server", healthy: bool = True, **env_overrides: str
) -> Server:
    """``python -m server`` on a free port; waits for /healthz (``ok``, or any answer when
    ``healthy`` is false, for deliberately degraded set-ups)."""
    work.mkdir(parents=True, exist_ok=True)
    port = free_port()
    env = server_env(work, port, **env_overrides)
    log_path = work / f"{name}.log"
    proc = _spawn([python_bin(), "-m", "server"], work, env, log_path)
    server = Server(f"http://127.0.0.1:{port}", proc, log_path, work)
    deadline = time.monotonic() + START_TIMEOUT_S
    try:
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise RuntimeError(f"{name} exited with {proc.returncode}:\n{server.log_tail()}")
            try:
                r = httpx.get(f"{server.base_url}/healthz", timeout=2)
                if r.json().get("status") == "ok" or (
                    not healthy and r.json().get("status") != "starting"
                ):
                    return server
            except (httpx.HTTPError, ValueError):
                pass
            time.sleep(0.5)
        raise RuntimeError(f"{name} not healthy after {START_TIMEOUT_S}s:\n{server.log_tail()}")
    except BaseException:
        server.stop()
        raise


@dataclass
class MilvusLiteServer:
    data_dir: Path
    port: int
    proc: subprocess.Popen[bytes] | None = None

    @property
    def uri(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> MilvusLiteServer:
        """Milvus Lite's server mode: one process owns the data dir, many clients share it."""
        args = [
            python_bin(),
            "-m",
            "milvus_lite",
            "server",
            "--data-dir",
            str(self.data_dir),
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
        ]
        self.proc = _spawn(
            args, self.data_dir.parent, dict(os.environ), self.data_dir.parent / "milvus-lite.log"
        )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", self.port)) == 0:
                    return self
            if self.proc.poll() is not None:
                raise RuntimeError(
                    (self.data_dir.parent / "milvus-lite.log").read_text(errors="replace")[-2000:]
                )
            time.sleep(0.2)
        raise RuntimeError("milvus-lite server did not open its port")

    def stop(self) -> None:
        if self.proc is not None:
            stop_process(self.proc)
