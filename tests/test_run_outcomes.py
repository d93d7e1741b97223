"""How runs end, in process: one run per session (leases on both engines), a tool that breaks,
and resume refusals that say what is true."""

from __future__ import annotations

import asyncio
import sqlite3
import uuid
from datetime import timedelta

import asyncmy.errors
import pytest
import sqlalchemy as sa

from graph.state import run_input
from persistence import dberrors, run_rows
from persistence import repository as repo
from persistence.db import Database
from persistence.leases import (
    INTERRUPTED,
    Lease,
    LeaseSweeper,
    SessionBusy,
    lease_fields,
    new_owner,
    sweep_expired,
)
from persistence.models import DiagnosisSession, utcnow

SIMPLE = "ERR_TIMEOUT 是什么意思"


async def _trace(services, sid: str):  # noqa: ANN001, ANN202
    async with services.db.session() as db:
        return await repo.get_trace(db, sid)


async def _expire_lease(db: Database, session_id: str) -> None:
    """What a dead worker leaves behind: RUNNING, and its lease ran out a moment ago."""
    async with db.session() as s:
        await s.execute(
            sa.update(DiagnosisSession)
            .where(DiagnosisSession.session_id == session_id)
            .values(lease_until=utcnow() - timedelta(seconds=1))
        )
        await s.commit()


async def test_of_racing_claims_exactly_one_gets_the_session(db_url: str) -> None:
    db = Database(db_url)
    try:
        async with db.session() as s:
            await repo.create_session(
                s, session_id="r-1", thread_id="t", query="q", status="FAILED"
            )
        leases = [Lease(db, "r-1", ttl_s=30) for _ in range(8)]
        outcomes = await asyncio.gather(
            *(lease.claim() for lease in leases), return_exceptions=True
        )
        winners = [lease for lease, out in zip(leases, outcomes, strict=True) if out is None]
        assert len(winners) == 1, outcomes
        busy = [o for o in outcomes if isinstance(o, SessionBusy)]
        assert len(busy) == 7 and all(0 < b.retry_after_s <= 30 for b in busy)
        async with db.session() as s:
            row = await repo.get_session(s, "r-1")
        assert row.status == "RUNNING" and row.lease_owner == winners[0].owner
        # A live lease is never swept; an expired one is, and can then be claimed again.
        async with db.session() as s:
            assert await sweep_expired(s, 3600) == 0
        await _expire_lease(db, "r-1")
        async with db.session() as s:
            assert await sweep_expired(s, 3600) == 1
            row = await repo.get_session(s, "r-1")
        assert row.status == "FAILED" and "resume" in row.error_message
        await Lease(db, "r-1", ttl_s=30).claim()
    finally:
        await db.dispose()


async def test_a_lookup_that_breaks_fails_the_session_in_words(services, monkeypatch) -> None:  # noqa: ANN001
    async def broken(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        return [][0]  # the kind of bug a half-imported knowledge base once triggered

    monkeypatch.setattr(services.kb, "alookup", broken)
    runner = services.runner()
    result = await runner.run(SIMPLE)
    await runner.drain()
    trace = await _trace(services, result.session_id)
    s = trace.session
    assert result.status == "FAILED" and s.status == "FAILED"
    assert "lookup_knowledge" in s.error_message and "failed unexpectedly" in s.error_message
    lookups = [i for i in trace.invocations if i.tool_name == "lookup_knowledge"]
    assert lookups and not any(i.success for i in lookups)
    assert all("list index out of range" in i.error_message for i in lookups)
    for text in [s.answer, s.error_message, result.error, *(i.error_message for i in lookups)]:
        assert "IndexError" not in text and "Error:" not in text
    assert s.self_evaluation["evidence_score"] == 0
    assert (s.total_steps, s.total_tool_calls) == (len(trace.steps), len(trace.invocations))


async def test_resume_restarts_a_run_that_never_got_a_checkpoint(services) -> None:  # noqa: ANN001
    """A worker died after opening the session, before the first checkpoint was stored: resuming
    starts the run again from its question instead of claiming the conversation moved on."""
    runner = services.runner()
    earlier = await runner.run(SIMPLE)  # the thread has an earlier question's checkpoints
    run = await runner.open("HikariCP 连接池超时怎么办", thread_id=earlier.thread_id)
    await _expire_lease(services.db, run.session_id)
    resumed = await runner.resume(run.session_id)
    await runner.drain()
    assert resumed.status == "SUCCESS", resumed.error
    assert "infrastructure/mysql-connection-pool.md" in resumed.answer
    trace = await _trace(services, run.session_id)
    assert trace.session.status == "SUCCESS" and trace.steps
    assert trace.session.total_steps == len(trace.steps)


async def test_resume_closes_a_run_whose_graph_had_finished(services) -> None:  # noqa: ANN001
    """The graph finished but the worker died before closing the record: resume closes it with
    the answer from the final checkpoint and calls no model."""
    runner = services.runner()
    run = await runner.open(SIMPLE)
    config = runner.config(run.thread_id, run.session_id, [])
    final = await services.graphs.chat.ainvoke(run_input(SIMPLE), config)
    await _expire_lease(services.db, run.session_id)
    resumed = await runner.resume(run.session_id)
    assert resumed.status == "SUCCESS" and resumed.answer == final["answer"]
    trace = await _trace(services, run.session_id)
    assert trace.session.status == "SUCCESS" and trace.session.answer == final["answer"]
    assert trace.steps == []  # nothing ran again


async def test_resume_refuses_only_when_the_conversation_really_moved_on(services) -> None:  # noqa: ANN001
    runner = services.runner()
    first = await runner.open(SIMPLE)
    config = runner.config(first.thread_id, first.session_id, [])
    await services.graphs.chat.ainvoke(run_input(SIMPLE), config)
    await _expire_lease(services.db, first.session_id)
    later = await runner.run("Flyway checksum mismatch 怎么修", thread_id=first.thread_id)
    assert later.status == "SUCCESS"
    with pytest.raises(ValueError, match=f"moved on: session {later.session_id}"):
        await runner.resume(first.session_id)
    async with services.db.session() as s:
        row = await repo.get_session(s, first.session_id)
    assert row.status == "FAILED" and row.lease_until is None  # given back, not left RUNNING


async def test_resume_of_a_running_session_is_refused(services) -> None:  # noqa: ANN001
    runner = services.runner()
    run = await runner.open(SIMPLE)  # leased, as while its run streams
    with pytest.raises(SessionBusy) as busy:
        await runner.resume(run.session_id)
    assert "running right now" in str(busy.value) and busy.value.retry_after_s >= 1
    async with services.db.session() as s:
        assert (await repo.get_session(s, run.session_id)).lease_owner == run.lease.owner


async def test_a_session_created_with_a_lease_is_held_by_its_run(db_url: str) -> None:
    db = Database(db_url)
    try:
        owner = new_owner()
        async with db.session() as s:
            await repo.create_session(
                s, session_id="h-1", query="q", **lease_fields(owner, 30, utcnow())
            )
            stolen = await run_rows.finish_session(
                s, "h-1", status="FAILED", owner=uuid.uuid4().hex
            )
            own = await run_rows.finish_session(s, "h-1", status="FAILED", owner=owner)
            row = await repo.get_session(s, "h-1")
        assert (stolen, own) == (False, True) and row.lease_until is None
    finally:
        await db.dispose()


async def test_the_sweeper_frees_a_dead_workers_session_within_a_lease(db_url: str) -> None:
    """Not only at start-up: a running server's sweeper closes a session whose worker stopped
    renewing, about one lease after its last renewal."""
    db = Database(db_url)
    sweeper = LeaseSweeper(db, ttl_s=2, unleased_stale_s=3600).start()
    try:
        async with db.session() as s:  # a run whose worker dies right after opening it
            await repo.create_session(
                s, session_id="d-1", query="q", **lease_fields(new_owner(), 2)
            )
            await repo.create_session(
                s, session_id="a-1", query="q"
            )  # no lease: an older version's
        for _ in range(40):
            async with db.session() as s:
                row = await repo.get_session(s, "d-1")
            if row.status != "RUNNING":
                break
            await asyncio.sleep(0.25)
        assert row.status == "FAILED" and row.error_message == INTERRUPTED
        async with db.session() as s:
            assert (await repo.get_session(s, "a-1")).status == "RUNNING"  # untouched for < 1 h
    finally:
        await sweeper.stop()
        await db.dispose()


@pytest.mark.parametrize(
    ("driver_error", "kind"),
    [
        (sqlite3.OperationalError("attempt to write a readonly database"), "writes_refused"),
        (sqlite3.OperationalError("database or disk is full"), "writes_refused"),
        (sqlite3.OperationalError("disk I/O error"), "writes_refused"),
        (sqlite3.OperationalError("database is locked"), "busy"),
        (asyncmy.errors.OperationalError(1290, "--read-only option"), "writes_refused"),
        (asyncmy.errors.OperationalError(1114, "The table is full"), "writes_refused"),
        (asyncmy.errors.OperationalError(2003, "Can't connect"), "unreachable"),
        (sqlite3.OperationalError("no such table: x"), None),
    ],
)
def test_database_failures_are_named_for_what_they_are(driver_error: Exception, kind) -> None:  # noqa: ANN001
    wrapped = sa.exc.OperationalError("INSERT ...", {}, driver_error)
    assert dberrors.classify(wrapped) == kind and dberrors.classify(driver_error) == kind
    message = dberrors.describe(wrapped)
    if kind == "writes_refused":
        assert "read-only" in message and "disk is full" in message and "unreachable" not in message
    assert message is None or "Error" not in message
