"""After a crash the server serves while it re-imports what the crash interrupted (issue 20).

The start-up recovery used to run before the API served: after a kill -9 every request got 503
``starting`` until the interrupted imports were re-embedded (6.5 min for 140 runbooks, 110 s for
one 3 MB upload). Now it runs as a background job like the first import: ``/healthz`` says
``importing`` with the job (``recovery: true``, per file), the console's banner follows it, and
the API answers meanwhile. The embedding of the re-import is held here until the test has seen
the server serve, so no timing decides the result.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from tests.support.kb import kb_settings
from tests.support.serving import HeldEmbeddings, health_until, serving


async def test_the_api_serves_while_interrupted_imports_are_reimported(
    tmp_path: Path, embeddings
) -> None:  # noqa: ANN001
    from server import create_app
    from services import Services

    settings = kb_settings(tmp_path)
    svc = await Services.start(settings, embeddings=embeddings)
    await svc.close()
    # What a kill -9 in the middle of an upload leaves: the row PROCESSING, its file new text.
    kb_dir = Path(settings.knowledge_base_dir)
    kb_file = sorted(kb_dir.rglob("*.md"))[0]
    victim = kb_file.relative_to(kb_dir).as_posix()
    kb_file.write_text(
        kb_file.read_text() + "\n\n## Recovery check\n\nRECOVERY_MARK_Q7 restart the worker.\n"
    )
    db_file = tmp_path / "kb.db"
    with sqlite3.connect(db_file) as con:
        con.execute("UPDATE api_document SET status = 'PROCESSING' WHERE file_path = ?", (victim,))

    held = HeldEmbeddings(embeddings)
    app = create_app(settings, embeddings=held)
    async with serving(app) as client:
        try:
            body = await health_until(client, {"importing"})
            assert body["import"]["recovery"] is True, body
            assert "interrupted" in body["message"]
            # It serves meanwhile: documents, lookups, sessions — no 503 "starting".
            assert (await client.get("/api/documents")).status_code == 200
            lookup = await client.post("/api/knowledge/lookup", json={"query": "ERR_TIMEOUT"})
            assert lookup.status_code == 200, lookup.text
            assert (await client.get("/api/sessions")).status_code == 200
            assert held.waiting.is_set() or not held.release.is_set()
        finally:
            held.release.set()
        done = await health_until(client, {"ok"})
        assert done["problems"] == []
        docs = (await client.get("/api/documents", params={"pageSize": 100})).json()["items"]
        assert {d["filePath"]: d["status"] for d in docs}[victim] == "INDEXED"
        found = await client.post("/api/knowledge/lookup", json={"query": "RECOVERY_MARK_Q7"})
        assert found.json()["result"]["primary"]["source"] == victim
