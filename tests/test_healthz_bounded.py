"""/healthz answers within a bound when the database is locked: a SQLite file held under an
exclusive lock by another process makes it 503 in about two seconds (not after the 30 s busy
timeout), saying the database is locked or not answering, and ok again once the lock is gone."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

import httpx

from tests.support.hostile import isolated_client


async def test_healthz_on_a_locked_sqlite_answers_503_quickly(tmp_path: Path, embeddings) -> None:  # noqa: ANN001
    async with isolated_client(tmp_path, embeddings) as client:
        assert (await client.get("/healthz")).status_code == 200
        url = client.services.settings.database_url  # type: ignore[attr-defined]
        path = url.split("///", 1)[1]
        client.services.db._write_probe = None  # type: ignore[attr-defined]  # no cached answer
        other = sqlite3.connect(path, timeout=0, isolation_level=None)
        other.execute("BEGIN EXCLUSIVE")  # another process holds the write lock
        try:
            t0 = time.monotonic()
            r = await client.get("/healthz")
            took = time.monotonic() - t0
        finally:
            other.execute("ROLLBACK")
            other.close()
        assert r.status_code == 503, r.text
        body = r.json()
        assert body["database"]["writable"] is False
        assert "busy" in body["message"] or "did not answer" in body["message"], body["message"]
        assert took < 8, took  # bounded (the probe's own limit is ~2 s; generous under load)
        client.services.db._write_probe = None  # type: ignore[attr-defined]
        again = await client.get("/healthz")
        assert again.status_code == 200, again.text


async def test_healthz_stays_quick_while_polled_under_a_lock(tmp_path: Path, embeddings) -> None:  # noqa: ANN001
    """Polling every few hundred ms does not pile up probes (one is cached a few seconds)."""
    async with isolated_client(tmp_path, embeddings) as client:
        url = client.services.settings.database_url  # type: ignore[attr-defined]
        other = sqlite3.connect(url.split("///", 1)[1], timeout=0, isolation_level=None)
        client.services.db._write_probe = None  # type: ignore[attr-defined]
        other.execute("BEGIN EXCLUSIVE")
        try:
            t0 = time.monotonic()
            codes = [(await client.get("/healthz")).status_code for _ in range(5)]
            took = time.monotonic() - t0
        finally:
            other.execute("ROLLBACK")
            other.close()
        assert codes == [503] * 5 and took < 12, (codes, took)
        assert isinstance(client, httpx.AsyncClient)
