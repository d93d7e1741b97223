"""Property-based run over the OpenAPI schema (schemathesis): no input yields a 500, on any endpoint.

The real server runs as a subprocess (its own event loop, like production); the run is bounded.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis.checks import not_a_server_error

from tests.conftest import ROOT
from tests.test_serve import free_port

MAX_EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "25"))
SLOW = {
    "/api/chat_stream",
    "/api/ai_ops",
    "/api/chat",
    "/api/sessions/{session_id}/replay",
    "/api/knowledge/init",
}


def _start(tmp: Path) -> tuple[subprocess.Popen[bytes], str]:
    shutil.copytree(ROOT / "knowledge_base", tmp / "kb")
    port = free_port()
    env = {
        **os.environ,
        "DATABASE_URL": f"sqlite+aiosqlite:///{tmp / 'fuzz.db'}",
        "MILVUS_URI": str(tmp / "milvus.db"),
        "KNOWLEDGE_BASE_DIR": str(tmp / "kb"),
        "DATA_DIR": str(tmp),
        "PORT": str(port),
        "LOG_LEVEL": "WARNING",
        "HF_HUB_OFFLINE": "1",
    }
    log = (tmp / "server.log").open("wb")
    proc = subprocess.Popen(
        [sys.executable, "-m", "server"],
        cwd=ROOT,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"{base}/healthz", timeout=2).json().get("status") == "ok":
                return proc, base
        except (httpx.HTTPError, ValueError):
            pass
        if proc.poll() is not None:
            break
        time.sleep(0.5)
    os.killpg(proc.pid, signal.SIGKILL)
    raise AssertionError((tmp / "server.log").read_text(errors="replace")[-3000:])


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory):
    proc, base = _start(tmp_path_factory.mktemp("fuzz"))
    yield base
    os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)


def _fuzz(operation: schemathesis.APIOperation, examples: int, failures: list[str]) -> None:
    @given(case=operation.as_strategy())
    @settings(
        max_examples=examples,
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
        derandomize=True,
    )
    def run(case: schemathesis.Case) -> None:
        response = case.call(timeout=120)
        if response.status_code >= 500:
            failures.append(
                f"{case.method} {case.formatted_path} -> {response.status_code}: {response.text[:200]}"
            )
        case.validate_response(response, checks=[not_a_server_error])

    try:
        run()
    except AssertionError as exc:  # keep going: report every failing operation at the end
        failures.append(f"{operation.method.upper()} {operation.path}: {str(exc)[:300]}")


def test_no_server_errors_for_generated_input(server: str) -> None:
    schema = schemathesis.openapi.from_url(f"{server}/openapi.json")
    failures: list[str] = []
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) >= 15
    for op in operations:
        _fuzz(op, 3 if op.path in SLOW else MAX_EXAMPLES, failures)
    assert not failures, "\n".join(failures)
