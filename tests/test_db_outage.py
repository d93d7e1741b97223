"""The database goes away during a turn (issue 20: "MariaDB killed mid-chat").

Seen before: 3 clients got 503 yet their sessions had been created, and later the sweep closed them
as "interrupted: the worker … stopped" — the worker never stopped, the database did. Here the
database goes away at a chosen statement of a turn (on MariaDB a TCP proxy the test owns is cut;
on SQLite another process holds the write lock) for longer than a run's lease, so this worker's
sweep runs while the record waits. The client must get a 503 that names the database; once the
database is back the session is closed saying the database failed — or, for a turn refused before
it ran, not left behind at all — and never shows as interrupted meanwhile.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import sqlite3
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
import sqlalchemy as sa
from sqlalchemy.engine import make_url

from persistence.leases import INTERRUPTED
from tests.support.kb import kb_settings
from tests.support.mysql import fresh_mysql_db
from tests.support.serving import serving
from tests.support.tcp_proxy import TcpProxy

LEASE_S = 2.0  # the sweep runs every third of it
DOWN_S = 3 * LEASE_S  # longer than a lease: the sweep sees the session's lease run out
QUESTION = "服务响应越来越慢应该先看什么"  # the chat graph looks it up: a tool call is recorded


@dataclass
class Outage:
    """Makes the database go away (``begin``) and come back (``end``)."""

    begin: Callable[[], None]
    end: Callable[[], None]
    said: str  # how the 503 and the record name it


def _sqlite_lock(path: Path) -> Outage:
    """Another process's write transaction: every write of the app waits, then fails as busy."""
    holder: list[sqlite3.Connection] = []

    def begin() -> None:
        con = sqlite3.connect(path, timeout=5, isolation_level=None)
        con.execute("BEGIN EXCLUSIVE")
        holder.append(con)

    def end() -> None:
        while holder:
            con = holder.pop()
            con.rollback()
            con.close()

    return Outage(begin, end, "the database is busy")


@pytest.fixture(params=["sqlite", pytest.param("mysql", marks=pytest.mark.mysql)])
async def stack(
    request: pytest.FixtureRequest, tmp_path: Path, embeddings, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[tuple[httpx.AsyncClient, Outage, object]]:  # noqa: ANN001
    from server import create_app
    from services import Services

    async with contextlib.AsyncExitStack() as stack:
        if request.param == "mysql":
            url = make_url(await stack.enter_async_context(fresh_mysql_db()))
            proxy = TcpProxy(url.host or "127.0.0.1", url.port or 3306).start()
            stack.callback(proxy.close)
            db_url = url.set(host="127.0.0.1", port=proxy.port).render_as_string(False)
            outage = Outage(proxy.cut, proxy.restore, "the database is unreachable")
        else:
            # A write waits this long for the lock before it fails (30 s in production).
            monkeypatch.setattr("persistence.db.SQLITE_BUSY_MS", 300)
            db_url = f"sqlite+aiosqlite:///{tmp_path / 'kb.db'}"
            outage = _sqlite_lock(tmp_path / "kb.db")
        settings = kb_settings(tmp_path, database_url=db_url, run_lease_seconds=LEASE_S)
        svc = await Services.start(settings, embeddings=embeddings)
        stack.push_async_callback(svc.close)
        client = await stack.enter_async_context(serving(create_app(services=svc)))
        stack.callback(outage.end)  # first thing on the way out: the stack's shutdown writes
        yield client, outage, svc


def _at_statement(svc: object, table: str, outage: Outage) -> None:
    """The database goes away just as the app first writes to ``table``."""
    fired: list[bool] = []

    def before(_conn, _cursor, statement: str, *_args) -> None:  # noqa: ANN001
        head = statement.lstrip()[:80].upper()
        if not fired and table.upper() in head and head.startswith(("INSERT", "UPDATE")):
            fired.append(True)
            outage.begin()

    sa.event.listen(svc.db.engine.sync_engine, "before_cursor_execute", before)  # type: ignore[attr-defined]


async def _sessions(svc: object) -> list[tuple[str, str, str | None]]:
    from persistence.models import DiagnosisSession

    async with svc.db.session() as s:  # type: ignore[attr-defined]
        rows = await s.execute(
            sa.select(
                DiagnosisSession.session_id,
                DiagnosisSession.status,
                DiagnosisSession.error_message,
            ).where(DiagnosisSession.query == QUESTION)
        )
    return [tuple(r) for r in rows.all()]


async def _watch(svc: object, until: Callable[[list], bool], timeout: float = 60) -> list:
    """Poll the records (the database is back) until ``until``; every state seen, in order."""
    seen: list = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            now = await _sessions(svc)
        except Exception:  # an engine connection the outage broke, replaced on the next try
            await asyncio.sleep(0.1)
            continue
        seen.append(now)
        if until(now) or any(e == INTERRUPTED for _, _, e in now):
            return seen
        await asyncio.sleep(0.1)
    raise AssertionError(f"never settled: {seen[-3:]}")


def _assert_503_naming_the_database(r: httpx.Response, outage: Outage) -> str:
    assert r.status_code == 503, r.text
    body = r.json()
    assert body["error"] == "database_unavailable", body
    assert outage.said in body["message"], body
    return body["message"]


async def test_the_database_going_away_mid_turn(stack) -> None:  # noqa: ANN001
    client, outage, svc = stack
    _at_statement(svc, "tool_invocation", outage)  # the turn's first tool call is being recorded
    r = await client.post("/api/chat", json={"question": QUESTION})
    message = _assert_503_naming_the_database(r, outage)
    sid = re.search(r"session ([0-9a-f]{32})", message)[1]  # type: ignore[index]
    await asyncio.sleep(DOWN_S)
    outage.end()

    seen = await _watch(svc, lambda now: now[0][1] != "RUNNING")
    [(found, status, error)] = seen[-1]
    assert found == sid
    assert not any(e == INTERRUPTED for states in seen for _, _, e in states), seen
    assert status == "FAILED" and outage.said in error, error
    trace = (await client.get(f"/api/sessions/{sid}")).json()
    s = trace["session"]
    assert s["totalToolCalls"] == len(trace["invocations"]) and s["totalSteps"] == len(
        trace["steps"]
    )
    after = await client.post("/api/chat", json={"question": "ERR_TIMEOUT 是什么意思？"})
    assert after.status_code == 200, after.text


async def test_the_database_going_away_before_the_turn_runs(stack) -> None:  # noqa: ANN001
    client, outage, svc = stack
    # The session is stored, then the database goes away as the conversation is claimed.
    _at_statement(svc, "conversation_lease", outage)
    r = await client.post("/api/chat", json={"question": QUESTION, "id": "outage-conversation"})
    _assert_503_naming_the_database(r, outage)
    await asyncio.sleep(DOWN_S)
    outage.end()

    # The turn never ran and its client was told so: its record goes, not "interrupted".
    seen = await _watch(svc, lambda now: not now)
    assert not any(e == INTERRUPTED for states in seen for _, _, e in states), seen
    await asyncio.sleep(2 * LEASE_S)  # a few more sweeps
    assert await _sessions(svc) == []
    again = await client.post("/api/chat", json={"question": QUESTION, "id": "outage-conversation"})
    assert again.status_code == 200, again.text
