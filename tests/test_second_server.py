"""A second server on the same DATA_DIR refuses to start (issue 20; docs/deploy.md says so).

A Milvus Lite file belongs to one process. A second server on it used to start anyway and run
"degraded" (vector store unreachable), storing every upload FAILED. It now stops at start-up with
a message naming the file and what to do.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from retrieval.writing.errors import MilvusFileInUse
from tests.support.kb import kb_settings

HOLD = """
import sys, time
from pymilvus import MilvusClient
MilvusClient(sys.argv[1])
print("open", flush=True)
time.sleep(600)
"""


async def test_a_second_server_on_the_same_milvus_file_refuses_to_start(
    tmp_path: Path, embeddings
) -> None:  # noqa: ANN001
    from services import Services

    settings = kb_settings(tmp_path)
    other = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(settings.milvus_uri)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert other.stdout is not None and other.stdout.readline().strip() == "open"
        t0 = time.monotonic()
        with pytest.raises(MilvusFileInUse) as refused:
            await Services.start(settings, embeddings=embeddings)
        message = str(refused.value)
        assert str(settings.milvus_uri) in message and "another process" in message
        assert "DATA_DIR" in message and "docs/deploy.md" in message
        assert time.monotonic() - t0 < 60
    finally:
        other.kill()
        other.wait()
    # Once the other process is gone, the same folder starts.
    svc = await Services.start(settings, embeddings=embeddings)
    try:
        assert len(svc.kb.catalog) > 0
    finally:
        await svc.close()
