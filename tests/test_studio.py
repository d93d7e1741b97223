"""`langgraph dev --port 2025` serves both graphs offline with input forms; a run through
langgraph-sdk completes."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import time
from pathlib import Path

import httpx
import pytest
from langgraph_sdk import get_client

from tests.support.kb import copy_fixture_kb
from tests.support.paths import ROOT
from tests.support.processes import stop_process
from tests.support.studio_port import PORT as STUDIO_PORT
from tests.support.studio_port import studio_port

pytestmark = pytest.mark.slow  # a langgraph dev server process

PORT = STUDIO_PORT  # 2024 is taken on these machines; tests take the port's lock first


def config_outside_checkout(work: Path) -> Path:
    """The repository's langgraph.json with its paths made absolute, written into ``work``.

    ``langgraph dev`` keeps its in-memory runs under ``./.langgraph_api`` and resolves graph paths
    from its working directory; running it in ``work`` keeps the checkout clean."""
    config = json.loads((ROOT / "langgraph.json").read_text(encoding="utf-8"))
    config["dependencies"] = [str((ROOT / d).resolve()) for d in config["dependencies"]]
    config["graphs"] = {
        name: f"{(ROOT / spec.split(':')[0]).resolve()}:{spec.split(':')[1]}"
        for name, spec in config["graphs"].items()
    }
    path = work / "langgraph.json"
    path.write_text(json.dumps(config), encoding="utf-8")
    return path


def _wait_ok(proc: subprocess.Popen[bytes], log: Path, timeout: float = 180) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"langgraph dev exited: {log.read_text(errors='replace')[-3000:]}")
        try:
            if httpx.get(f"http://127.0.0.1:{PORT}/ok", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.5)
    raise AssertionError(
        f"langgraph dev did not answer /ok: {log.read_text(errors='replace')[-3000:]}"
    )


@pytest.fixture(scope="module")
def studio_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("studio")


@pytest.fixture(scope="module")
def studio(studio_dir: Path):
    """One ``langgraph dev`` for the module (its start and first graph load are the slow part)."""
    tmp_path = studio_dir
    exe = Path(os.sys.executable).with_name("langgraph")
    if not exe.exists():
        pytest.skip("langgraph-cli[inmem] is not installed (pip install -e '.[test]')")
    copy_fixture_kb(tmp_path / "kb")
    env = {
        **os.environ,
        "DATABASE_URL": f"sqlite+aiosqlite:///{tmp_path / 'studio.db'}",
        "MILVUS_URI": str(tmp_path / "milvus.db"),
        "KNOWLEDGE_BASE_DIR": str(tmp_path / "kb"),
        "DATA_DIR": str(tmp_path),
        "LANGSMITH_TRACING": "false",
        "HF_HUB_OFFLINE": "1",
        "PYTHONPATH": str(ROOT),
    }
    with studio_port():
        log = tmp_path / "langgraph-dev.log"  # outside the repository
        with log.open("wb") as out:
            proc = subprocess.Popen(
                [
                    str(exe),
                    "dev",
                    "--port",
                    str(PORT),
                    "--no-browser",
                    "--no-reload",
                    "--config",
                    str(config_outside_checkout(tmp_path)),
                ],
                cwd=tmp_path,
                env=env,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        try:
            _wait_ok(proc, log)
            yield f"http://127.0.0.1:{PORT}"
        finally:
            stop_process(proc)  # by its PID (its whole process group)


async def test_langgraph_dev_serves_both_graphs(studio: str) -> None:
    client = get_client(url=studio)
    assistants = await client.assistants.search()
    assert {a["graph_id"] for a in assistants} >= {"chat", "aiops"}
    # Studio opens before the first knowledge-base import is done: reading a graph's schemas and
    # drawing it do not wait for the services (before: 87 s on a fresh data directory).
    by_graph = {a["graph_id"]: a["assistant_id"] for a in assistants}
    t0 = time.monotonic()
    await client.assistants.get_schemas(by_graph["aiops"])
    await client.assistants.get_graph(by_graph["aiops"])
    assert time.monotonic() - t0 < 10
    question = "ERR_TIMEOUT 是什么意思"
    out = await client.runs.wait(
        None,
        "chat",
        input={"question": question},  # what Studio's input form sends
    )
    assert "api/payment-errors.md" in out["answer"]
    schema = await client.assistants.get_schemas(by_graph["chat"])
    assert (
        "lookup_budget" in schema["context_schema"]["properties"]
    )  # Studio shows the per-run knobs
    # Studio renders the input schema as a form: a question (chat) or a note (AI-Ops), or the
    # messages of its chat panel; none of them is required on its own.
    assert set(schema["input_schema"]["properties"]) == {"question", "messages"}
    assert not schema["input_schema"].get("required")
    aiops = (await client.assistants.get_schemas(by_graph["aiops"]))["input_schema"]
    assert set(aiops["properties"]) == {"note", "messages"} and not aiops.get("required")


async def test_both_graphs_run_from_messages_alone(studio: str) -> None:
    """What Studio's chat panel and any LangGraph client send: ``{"messages": [...]}`` only."""
    client = get_client(url=studio)
    thread = await client.threads.create()
    chat = await client.runs.wait(
        thread["thread_id"],
        "chat",
        input={"messages": [{"type": "human", "content": "ERR_TIMEOUT 是什么意思"}]},
    )
    assert "api/payment-errors.md" in chat["answer"]
    assert chat["question"] == "ERR_TIMEOUT 是什么意思"
    # the question is in the conversation once, followed by the answer
    assert [m["type"] for m in chat["messages"]] == ["human", "ai"]
    report = await client.runs.wait(
        None,
        "aiops",
        input={
            "messages": [{"type": "human", "content": [{"type": "text", "text": "分析当前告警"}]}]
        },
    )
    assert report["question"] == "分析当前告警"
    assert report["answer"].startswith("# 告警分析报告") and "## 结论" in report["answer"]
    assert "PaymentGatewayTimeoutRateHigh" in report["answer"]


async def test_a_studio_run_is_a_recorded_session(studio: str, studio_dir: Path) -> None:
    """Studio runs go through the same runner and recorder as HTTP runs: a session with origin
    ``studio``, its steps and tool calls, listed in /sessions like any other."""
    client = get_client(url=studio)
    out = await client.runs.wait(None, "chat", input={"question": "Redis 内存满了怎么办"})
    assert out["session_id"], out  # before: empty, nothing recorded
    db = sqlite3.connect(studio_dir / "studio.db")
    deadline = time.monotonic() + 30
    while True:  # the session closes as the run's root chain ends
        row = db.execute(
            "select origin, status, query, answer from diagnosis_session where session_id = ?",
            (out["session_id"],),
        ).fetchone()
        if (row and row[1] != "RUNNING") or time.monotonic() > deadline:
            break
        time.sleep(0.3)
    assert row is not None, "the Studio run left no session"
    assert row[:3] == ("studio", "SUCCESS", "Redis 内存满了怎么办"), row
    assert row[3] == out["answer"]
    steps = db.execute(
        "select count(*) from agent_step where session_id = ?", (out["session_id"],)
    ).fetchone()[0]
    calls = db.execute(
        "select tool_name from tool_invocation where session_id = ?", (out["session_id"],)
    ).fetchall()
    assert steps >= 1 and ("lookup_knowledge",) in calls, (steps, calls)
