"""The CLIs beside a running server: it holds the Milvus Lite folder (one process at a time may
open it), so ``python -m retrieval lookup`` and ``python -m persistence sessions replay`` ask the
server over its HTTP API and give the same answers as HTTP — no ``DataDirLockedError`` traceback,
no replay judged against a store the CLI could not open."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import httpx
import pytest

from tests.support.processes import python_bin, server_env, start_server, stop_process

pytestmark = pytest.mark.slow  # a real server and CLI processes

QUESTION = "ERR_TIMEOUT 是什么意思？"


def cli(work: Path, port: int, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [python_bin(), "-m", *args],
        cwd=work,
        env=server_env(work, port),
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_lookup_and_replay_beside_the_server_match_http(tmp_path: Path) -> None:
    work = tmp_path / "srv"
    server = start_server(work)
    port = int(server.base_url.rsplit(":", 1)[1])
    try:
        # Lookup: the CLI's JSON is the server's lookup, keys as the CLI names them.
        http = httpx.post(f"{server.base_url}/api/knowledge/lookup", json={"query": "ERR_TIMEOUT"})
        assert http.status_code == 200, http.text
        look = cli(work, port, "retrieval", "lookup", "ERR_TIMEOUT", "--json")
        assert look.returncode == 0, look.stderr[-3000:]
        assert "Traceback" not in look.stderr and "DataDirLocked" not in look.stderr, look.stderr
        got = json.loads(look.stdout)
        want = http.json()
        assert got["result"]["found"] is True
        assert got["result"]["relevanceLevel"] == want["result"]["relevanceLevel"]
        assert got["result"]["primary"]["source"] == want["result"]["primary"]["source"]
        assert [d["source"] for d in got["scores"]["documents"]] == [
            d["source"] for d in want["scores"]["documents"]
        ]
        assert "l0_titles" in got["scores"]  # the CLI's own names, as without a server
        # A quiet start-up: no faiss loader fallbacks that read like errors.
        assert "ModuleNotFoundError" not in server.log_path.read_text(errors="replace")
        text = cli(work, port, "retrieval", "lookup", "ERR_TIMEOUT")
        assert text.returncode == 0 and "found=True" in text.stdout, text.stdout + text.stderr

        # Replay: recorded by the server, judged against the store it has open.
        chat = httpx.post(f"{server.base_url}/api/chat", json={"question": QUESTION}, timeout=300)
        assert chat.status_code == 200, chat.text
        sid = chat.json()["sessionId"]
        rp = cli(work, port, "persistence", "sessions", "replay", sid)
        assert rp.returncode == 0, rp.stderr[-3000:]
        assert "Traceback" not in rp.stderr, rp.stderr[-3000:]
        report = json.loads(rp.stdout)
        assert report["identical"] is True, report["differences"]
        replay_id = report["replay_session_id"]
        listed = httpx.get(f"{server.base_url}/api/sessions/{replay_id}").json()
        assert listed["session"]["replayOf"] == sid, listed["session"]

        missing = cli(work, port, "persistence", "sessions", "replay", "no-such-session")
        assert missing.returncode == 1 and "Traceback" not in missing.stderr
        assert "no-such-session" in missing.stderr, missing.stderr
    finally:
        server.stop()


def test_replay_with_the_folder_held_and_no_server_says_so(tmp_path: Path) -> None:
    """A process holds the Milvus Lite folder but serves no HTTP on PORT: nothing is replayed,
    and the message names the folder and what to do — not a divergence against empty lookups."""
    work = tmp_path / "srv"
    server = start_server(work)
    try:
        # The server holds the folder; the CLI is pointed at a port where nothing listens.
        env = server_env(work, 1)  # port 1: nothing answers there
        rp = subprocess.run(
            [python_bin(), "-m", "persistence", "sessions", "replay", "any"],
            cwd=work,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert rp.returncode == 1, rp.stdout + rp.stderr
        assert "not replayed" in rp.stderr and "milvus.db" in rp.stderr, rp.stderr
        assert "Traceback" not in rp.stderr
        look = subprocess.run(
            [python_bin(), "-m", "retrieval", "lookup", "ERR_TIMEOUT"],
            cwd=work,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert look.returncode == 2 and "Traceback" not in look.stderr, look.stderr
        assert "milvus.db" in look.stderr and "no server answered" in look.stderr, look.stderr
    finally:
        server.stop()


async def test_a_studio_run_beside_the_server_is_the_servers_run(tmp_path: Path) -> None:
    """``langgraph dev`` beside ``make serve``: the Studio process cannot open the Milvus Lite
    folder, so its run goes to the server — the same answer as over HTTP (before: "not found"
    with a ConnectionConfigException inside), recorded there as a Studio session."""

    from tests.support.studio_port import studio_port

    exe = Path(os.sys.executable).with_name("langgraph")
    if not exe.exists():
        pytest.skip("langgraph-cli[inmem] is not installed (pip install -e '.[test]')")
    with studio_port():
        await _studio_beside_the_server(tmp_path, exe)


async def _studio_beside_the_server(tmp_path: Path, exe: Path) -> None:
    from langgraph_sdk import get_client

    from tests.test_studio import PORT, _wait_ok, config_outside_checkout

    work = tmp_path / "srv"
    server = start_server(work)
    port = int(server.base_url.rsplit(":", 1)[1])
    studio_dir = tmp_path / "studio"
    studio_dir.mkdir()
    env = server_env(work, port) | {"LANGSMITH_TRACING": "false"}
    log = tmp_path / "langgraph-dev.log"  # outside the repository
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [str(exe), "dev", "--port", str(PORT), "--no-browser", "--no-reload"]
            + ["--config", str(config_outside_checkout(studio_dir))],
            cwd=studio_dir,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        _wait_ok(proc, log)
        http = httpx.post(f"{server.base_url}/api/chat", json={"question": QUESTION}, timeout=300)
        assert http.status_code == 200, http.text
        client = get_client(url=f"http://127.0.0.1:{PORT}")
        run = await client.runs.wait(None, "chat", input={"question": QUESTION})
        assert run["answer"] == http.json()["answer"], (run["answer"], log.read_text()[-2000:])
        assert "ConnectionConfigException" not in run["answer"]
        listed = httpx.get(f"{server.base_url}/api/sessions/{run['session_id']}").json()
        assert listed["session"]["origin"] == "studio", listed
        assert listed["session"]["status"] == "SUCCESS"
        assert "DataDirLocked" not in log.read_text(errors="replace")
    finally:
        stop_process(proc)
        server.stop()
