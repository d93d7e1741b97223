"""Faults with real processes: Milvus unreachable, and several workers starting on a fresh install."""

from __future__ import annotations

import asyncio
import subprocess
import time
from pathlib import Path

import httpx
import pytest

from tests.support.mysql import create_mysql_db, drop_mysql_db, require_mysql
from tests.support.processes import (
    MilvusLiteServer,
    free_port,
    python_bin,
    server_env,
    start_server,
    stop_process,
)

pytestmark = pytest.mark.slow  # real server processes

DOC = b"# Disk full runbook\n\nClean /var/log first, then grow the volume.\n"


def test_milvus_unreachable_falls_back_to_l0(tmp_path: Path) -> None:
    first = start_server(tmp_path, name="with-milvus")  # imports the sample runbooks
    first.stop()
    dead = f"http://127.0.0.1:{free_port()}"
    srv = start_server(tmp_path, name="dead-milvus", healthy=False, MILVUS_URI=dead)
    try:
        h = httpx.get(f"{srv.base_url}/healthz").json()
        assert (
            h["status"] == "degraded"
            and h["vectorStore"]["ok"] is False
            and h["database"]["ok"] is True
        )
        l0 = httpx.post(
            f"{srv.base_url}/api/knowledge/lookup", json={"query": "ERR_TIMEOUT"}
        ).json()
        assert l0["result"]["relevanceLevel"] == "PRECISE"  # L0 still answers
        l1 = httpx.post(
            f"{srv.base_url}/api/knowledge/lookup",
            json={"query": "database connection pool timeout"},
        ).json()
        assert l1["result"]["found"] is False and "L1 unavailable" in l1["result"]["message"]
        assert "unreachable" in l1["scores"]["l1Error"]
        chat = httpx.post(
            f"{srv.base_url}/api/chat", json={"question": "ERR_TIMEOUT 是什么意思"}, timeout=60
        )
        assert chat.status_code == 200 and "api/payment-errors.md" in chat.json()["answer"]
        up = httpx.post(
            f"{srv.base_url}/api/documents/upload",
            files={"file": ("disk.md", DOC, "text/markdown")},
            data={"category": "ops"},
        )
        assert up.status_code == 201 and up.json()["result"]["status"] == "FAILED"
        assert "unreachable" in up.json()["document"]["errorMessage"]
        docs = httpx.get(f"{srv.base_url}/api/documents", params={"status": "INDEXED"}).json()
        assert docs["total"] == 6  # nothing already stored was lost
        victim = docs["items"][0]["docId"]
        gone = httpx.delete(f"{srv.base_url}/api/documents/{victim}")
        assert (
            gone.status_code == 503 and gone.json()["message"]
        )  # refused rather than half-deleted
        assert httpx.get(f"{srv.base_url}/api/documents/{victim}").json()["status"] == "INDEXED"
    finally:
        srv.stop()


@pytest.mark.mysql
def test_workers_starting_together_on_a_fresh_install(tmp_path: Path) -> None:
    server_url = require_mysql()
    db_url = asyncio.run(create_mysql_db(server_url))
    milvus = MilvusLiteServer(tmp_path / "milvus-data", free_port()).start()
    port = free_port()
    env = server_env(tmp_path, port, DATABASE_URL=db_url, MILVUS_URI=milvus.uri, LOG_LEVEL="INFO")
    cmd = [
        python_bin(),
        "-m",
        "uvicorn",
        "server:create_app",
        "--factory",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--workers",
        "3",
    ]
    with (tmp_path / "workers.log").open("wb") as log:
        proc = subprocess.Popen(
            cmd, cwd=tmp_path, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
    try:
        base, deadline = f"http://127.0.0.1:{port}", time.monotonic() + 300
        log_path = tmp_path / "workers.log"
        while (
            time.monotonic() < deadline
            and log_path.read_text(errors="replace").count("SuperBiz Agent ready") < 3
        ):
            assert proc.poll() is None, log_path.read_text(errors="replace")[-3000:]
            time.sleep(0.5)
        assert httpx.get(f"{base}/healthz", timeout=10).status_code == 200
        stats = httpx.get(f"{base}/api/knowledge/stats").json()
        assert stats["byStatus"] == {"PENDING": 0, "PROCESSING": 0, "INDEXED": 6, "FAILED": 0}, (
            stats
        )
        log_text = (tmp_path / "workers.log").read_text(errors="replace")
        assert (
            log_text.count("first start: importing") == 1
        )  # one worker imported; the others found it done
        assert "Traceback" not in log_text
    finally:
        stop_process(proc)
        milvus.stop()
        asyncio.run(drop_mysql_db(server_url, db_url))
