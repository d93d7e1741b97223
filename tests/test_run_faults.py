"""Runs under faults, with real processes: a server (``python -m server``) whose model is the local
OpenAI-protocol stub, slowed down so runs are in flight when the fault hits.

- a resume while the run streams is refused (one run per session), and nothing is written twice;
- streams whose client goes away end FAILED at once, with totals equal to their rows;
- a database that turns read-only mid-stream gives the client an ``error`` event, and requests a
  truthful 503 (read-only, not "unreachable");
- kill -9 during 50 streamed chats: after a restart every interrupted session leaves RUNNING within
  about one lease, and resumes to the same rows an uninterrupted run writes.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest

from tests.support.openai_stub import StubLLM
from tests.support.processes import Server, start_server

pytestmark = pytest.mark.slow  # real server processes
LEASE_S = 10  # short, so a dead worker's sessions are freed quickly; not shorter: a loaded 2-core
# machine with 50 streams on SQLite can delay a renewal by seconds
SIMPLE = "ERR_TIMEOUT 是什么意思"
COMPLEX = "支付网关 ERR_TIMEOUT 突增，同时订单服务 HikariCP 连接池超时，分别怎么排查？"
EXCEPTION_NAME = re.compile(r"\b\w*(Error|Exception)\b")


def _server(work: Path, stub: StubLLM, name: str = "server") -> Server:
    return start_server(
        work,
        name=name,
        LLM_BASE_URL=stub.base_url,
        LLM_MODEL="stub",
        LLM_API_KEY="k",
        LLM_MAX_RETRIES="0",
        RUN_LEASE_SECONDS=str(LEASE_S),
        LOG_LEVEL="WARNING",
    )


@pytest.fixture(scope="module")
def stub() -> Iterator[StubLLM]:
    s = StubLLM().start()
    yield s
    s.stop()


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, stub: StubLLM) -> Iterator[Server]:
    srv = _server(tmp_path_factory.mktemp("runs"), stub)
    yield srv
    srv.stop()


@pytest.fixture
def slow(stub: StubLLM) -> Iterator[Callable[[float], None]]:
    def set_delay(seconds: float) -> None:
        stub.delay_s = seconds

    yield set_delay
    stub.delay_s = 0.0


def _sse(lines: Iterator[str]) -> Iterator[tuple[str, dict]]:
    event = "message"
    for line in lines:
        if line.startswith("event:"):
            event = line[6:].strip()
        elif line.startswith("data:"):
            yield event, json.loads(line[5:])


async def _stream(
    client: httpx.AsyncClient, path: str, body: dict, stop_after: int | None = None
) -> list[tuple[str, dict]]:
    """Read an SSE run; with ``stop_after``, hang up after that many events (a client going away)."""
    events: list[tuple[str, dict]] = []
    async with client.stream("POST", path, json=body) as r:
        event = "message"
        async for line in r.aiter_lines():
            if line.startswith("event:"):
                event = line[6:].strip()
            elif line.startswith("data:"):
                events.append((event, json.loads(line[5:])))
                if stop_after and len(events) >= stop_after:
                    break
    return events


def _trace(base: str, sid: str) -> dict:
    r = httpx.get(f"{base}/api/sessions/{sid}", timeout=30)
    assert r.status_code == 200, r.text
    return r.json()


def _assert_totals_equal_rows(trace: dict) -> None:
    s = trace["session"]
    assert s["totalSteps"] == len(trace["steps"]), s
    assert s["totalToolCalls"] == len(trace["invocations"]), s
    assert s["totalTokens"] == sum(st["tokenCount"] or 0 for st in trace["steps"]), s


def _shape(trace: dict) -> tuple[list[str], list[list[str]]]:
    """The model steps (by agent) in order, and the tool calls (by tool) each step made: parallel
    calls of one step finish in any order, so each step's calls are compared as a sorted list."""
    by_step: dict[object, list[str]] = {}
    for i in trace["invocations"]:
        by_step.setdefault(i["stepId"], []).append(i["toolName"])
    return (
        [st["agentName"] for st in trace["steps"]],
        [sorted(calls) for calls in by_step.values()],
    )


def _assert_same_rows(trace: dict, reference: dict) -> None:
    """Nothing twice, nothing lost: the rows an uninterrupted run of the same question writes (the
    stub answers deterministically)."""
    assert _shape(trace) == _shape(reference), (_shape(trace), _shape(reference))
    indexes = [st["stepIndex"] for st in trace["steps"]]
    assert indexes == sorted(set(indexes)), indexes


def _wait_closed(base: str, sids: list[str], timeout: float) -> tuple[dict[str, dict], float]:
    """Poll until none of ``sids`` is RUNNING; returns their traces and the seconds it took."""
    t0 = time.monotonic()
    while True:
        traces = {sid: _trace(base, sid) for sid in sids}
        running = [sid for sid, t in traces.items() if t["session"]["status"] == "RUNNING"]
        if not running:
            return traces, time.monotonic() - t0
        assert time.monotonic() - t0 < timeout, f"{len(running)} still RUNNING: {running[:3]}"
        time.sleep(0.5)


def _reference(base: str, question: str | None) -> dict:
    """The rows an uninterrupted run writes: a chat of ``question``, or an alert analysis."""
    if question is None:
        with httpx.Client(timeout=120) as c, c.stream("POST", f"{base}/api/ai_ops", json={}) as r:
            events = list(_sse(r.iter_lines()))
        assert events[-1][0] == "done", events[-2:]
        return _trace(base, events[0][1]["sessionId"])
    r = httpx.post(f"{base}/api/chat", json={"question": question}, timeout=120)
    assert r.status_code == 200, r.text
    return _trace(base, r.json()["sessionId"])


def test_resume_while_the_run_streams_is_refused_and_nothing_is_doubled(
    server: Server, slow: Callable[[float], None]
) -> None:
    base = server.base_url
    slow(0.3)
    box: dict = {"events": []}
    started = threading.Event()

    def consume() -> None:
        with (
            httpx.Client(timeout=300) as c,
            c.stream("POST", f"{base}/api/ai_ops", json={}) as r,
        ):
            for event in _sse(r.iter_lines()):
                box["events"].append(event)
                if event[0] == "session":
                    box["sid"] = event[1]["sessionId"]
                    started.set()

    reader = threading.Thread(target=consume)
    reader.start()
    refusals: list[tuple[httpx.Response, bool]] = []
    try:
        assert started.wait(60), server.log_tail()
        url = f"{base}/api/sessions/{box['sid']}/resume"
        for _ in range(3):
            time.sleep(0.4)
            r = httpx.post(url, timeout=60)
            refusals.append((r, any(e == "done" for e, _ in box["events"])))

        async def two_at_once() -> list[httpx.Response]:
            async with httpx.AsyncClient(timeout=60) as c:
                return list(await asyncio.gather(c.post(url), c.post(url)))

        for r in asyncio.run(two_at_once()):
            refusals.append((r, any(e == "done" for e, _ in box["events"])))
    finally:
        reader.join(timeout=300)
        slow(0.0)
    assert box["events"][-1][0] == "done", box["events"][-3:]
    for r, finished in refusals:
        assert not finished  # each resume was sent while the run streamed
        assert r.status_code == 409 and r.json()["error"] == "session_running", r.text
        assert int(r.headers["retry-after"]) >= 1
        assert not EXCEPTION_NAME.search(r.json()["message"])
    trace = _trace(base, box["sid"])
    assert trace["session"]["status"] == "SUCCESS"
    _assert_same_rows(trace, _reference(base, None))  # not twice: the refused resumes ran nothing
    _assert_totals_equal_rows(trace)


def test_streams_whose_client_goes_away_end_failed_with_totals_equal_to_rows(
    server: Server, slow: Callable[[float], None]
) -> None:
    base = server.base_url
    slow(0.25)

    async def hang_up_early() -> list[str]:
        async with httpx.AsyncClient(base_url=base, timeout=120) as c:
            runs = [
                _stream(c, "/api/chat_stream", {"question": (SIMPLE, COMPLEX)[i % 2]}, 2 + i % 6)
                for i in range(12)
            ]
            return [events[0][1]["sessionId"] for events in await asyncio.gather(*runs)]

    sids = asyncio.run(hang_up_early())
    traces, _ = _wait_closed(base, sids, timeout=15)  # at once, not after the lease runs out
    time.sleep(2)  # the graphs were stopped too: no row lands after the session was closed
    slow(0.0)
    for sid in sids:
        before, trace = traces[sid], _trace(base, sid)
        assert trace["session"]["status"] == "FAILED"
        assert "cancelled" in trace["session"]["errorMessage"]
        assert len(trace["steps"]) == len(before["steps"])
        assert len(trace["invocations"]) == len(before["invocations"])
        _assert_totals_equal_rows(trace)
    # A cancelled run resumes to exactly the rows an uninterrupted one writes.
    complex_sid = next(sid for i, sid in enumerate(sids) if i % 2 and traces[sid]["steps"])
    r = httpx.post(f"{base}/api/sessions/{complex_sid}/resume", timeout=120)
    assert r.status_code == 200 and r.json()["status"] == "SUCCESS", r.text
    resumed = _trace(base, complex_sid)
    _assert_same_rows(resumed, _reference(base, COMPLEX))
    _assert_totals_equal_rows(resumed)


def _chattr(flag: str, files: list[Path]) -> None:
    subprocess.run(["chattr", flag, *map(str, files)], check=True)


def test_a_database_turning_read_only_mid_stream(
    server: Server, slow: Callable[[float], None]
) -> None:
    if os.geteuid() != 0:
        pytest.skip("chattr +i (immutable files) needs root")
    base, db = server.base_url, server.work / "kb.db"
    files = [p for p in (db, db.with_name("kb.db-wal")) if p.exists()]
    slow(0.4)
    box: dict = {"events": []}
    midway = threading.Event()

    def consume() -> None:
        with (
            httpx.Client(timeout=300) as c,
            c.stream("POST", f"{base}/api/chat_stream", json={"question": COMPLEX}) as r,
        ):
            for event in _sse(r.iter_lines()):
                box["events"].append(event)
                if event[0] == "node":
                    midway.set()

    reader = threading.Thread(target=consume)
    reader.start()
    try:
        assert midway.wait(60), server.log_tail()
        _chattr("+i", files)  # the records database can be read but not written
        reader.join(timeout=120)
        kind, last = box["events"][-1]
        assert kind == "error", box["events"][-3:]
        assert "refuses writes" in last["error"] and "read-only" in last["error"]
        assert not EXCEPTION_NAME.search(last["error"])
        sid = box["events"][0][1]["sessionId"]

        chat = httpx.post(f"{base}/api/chat", json={"question": SIMPLE}, timeout=60)
        assert chat.status_code == 503 and chat.json()["error"] == "database_read_only"
        assert "read-only" in chat.json()["message"] and "unreachable" not in chat.json()["message"]
        stream = httpx.post(f"{base}/api/chat_stream", json={"question": SIMPLE}, timeout=60)
        assert stream.status_code == 503 and stream.json()["error"] == "database_read_only"
        for _ in range(40):  # the write probe is cached for a few seconds
            health = httpx.get(f"{base}/healthz", timeout=30)
            if health.status_code == 503:
                break
            time.sleep(0.25)
        body = health.json()
        assert health.status_code == 503 and body["database"]["reachable"] is True
        assert body["database"]["writable"] is False and "read-only" in body["message"]
        assert httpx.get(f"{base}/api/sessions", timeout=30).status_code == 200  # reads work
        assert _trace(base, sid)["session"]["status"] == "RUNNING"  # cannot be closed yet
    finally:
        _chattr("-i", files)
        slow(0.0)
    # Once the database takes writes again, the interrupted run's record is closed, truthfully.
    traces, _ = _wait_closed(base, [sid], timeout=60)
    s = traces[sid]["session"]
    assert s["status"] == "FAILED" and "cannot be recorded" in s["errorMessage"]
    _assert_totals_equal_rows(traces[sid])
    for _ in range(40):
        if httpx.get(f"{base}/healthz", timeout=30).status_code == 200:
            break
        time.sleep(0.25)
    assert httpx.post(f"{base}/api/chat", json={"question": SIMPLE}, timeout=60).status_code == 200


def test_kill_9_during_50_streamed_chats(
    tmp_path: Path, stub: StubLLM, record_property: Callable[[str, object], None]
) -> None:
    first = _server(tmp_path, stub, name="before-kill")
    questions = [(SIMPLE, COMPLEX)[i % 2] for i in range(50)]
    sids: list[str] = []

    async def fifty() -> None:
        async def one(c: httpx.AsyncClient, q: str) -> None:
            try:
                async with c.stream("POST", "/api/chat_stream", json={"question": q}) as r:
                    async for line in r.aiter_lines():
                        if line.startswith("data:") and '"type": "session"' in line:
                            sids.append(json.loads(line[5:])["sessionId"])
            except httpx.HTTPError:
                pass  # the server is killed under it

        limits = httpx.Limits(max_connections=60)
        async with httpx.AsyncClient(base_url=first.base_url, timeout=300, limits=limits) as c:
            await asyncio.gather(*(one(c, q) for q in questions))

    stub.delay_s = 0.5
    clients = threading.Thread(target=lambda: asyncio.run(fifty()))
    seen = len(stub.requests)
    clients.start()
    try:
        deadline = time.monotonic() + 120
        # A simple chat makes 2 model calls, a complex one 4 (rules supervisor, settled steps):
        # after ~55 of the ~150, every stream has started and most runs are mid-way.
        while len(stub.requests) - seen < 55 and time.monotonic() < deadline:
            time.sleep(0.1)
        os.killpg(first.proc.pid, signal.SIGKILL)  # mid-run: about one model call per chat so far
        first.proc.wait()
        killed_at = time.monotonic()
    finally:
        clients.join(timeout=60)
        stub.delay_s = 0.0
    assert len(sids) == 50, f"only {len(sids)} streams had started"

    second = _server(tmp_path, stub, name="after-kill")
    try:
        base = second.base_url
        traces, after_restart_s = _wait_closed(base, sids, timeout=LEASE_S * 3 + 30)
        since_kill_s = time.monotonic() - killed_at
        interrupted = [s for s in sids if traces[s]["session"]["status"] == "FAILED"]
        assert len(interrupted) >= 40, "the kill came too late to interrupt most runs"
        for sid in interrupted:
            t = traces[sid]
            assert "interrupted" in t["session"]["errorMessage"]
            _assert_totals_equal_rows(t)
            if t["steps"]:  # recorded steps always have a checkpoint to resume from
                cps = httpx.get(f"{base}/api/sessions/{sid}/checkpoints", timeout=30).json()
                assert cps, sid

        async def resume_all() -> list[list[httpx.Response]]:
            gate = asyncio.Semaphore(8)
            async with httpx.AsyncClient(base_url=base, timeout=300) as c:

                async def one(i: int, sid: str) -> list[httpx.Response]:
                    async with gate:
                        n = 2 if i < 5 else 1  # the first five are resumed twice at once
                        calls = [c.post(f"/api/sessions/{sid}/resume") for _ in range(n)]
                        return list(await asyncio.gather(*calls))

                return list(await asyncio.gather(*(one(i, s) for i, s in enumerate(interrupted))))

        results = asyncio.run(resume_all())
        for responses in results:
            assert [r.status_code for r in responses].count(200) == 1, [r.text for r in responses]
            for r in responses:
                if r.status_code == 200:
                    assert r.json()["status"] == "SUCCESS", r.text
                else:
                    assert r.status_code == 409, r.text
        reference = {q: _reference(base, q) for q in (SIMPLE, COMPLEX)}
        for sid in sids:
            t = _trace(base, sid)
            assert t["session"]["status"] == "SUCCESS", t["session"]
            _assert_same_rows(t, reference[t["session"]["query"]])
            _assert_totals_equal_rows(t)
        numbers = {
            "streams": 50,
            "interrupted": len(interrupted),
            "closed_after_restart_s": round(after_restart_s, 1),
            "closed_after_kill_s": round(since_kill_s, 1),
            "lease_s": LEASE_S,
        }
        record_property("kill9", numbers)
        print(f"\nKILL -9 during 50 streams: {numbers}")
    finally:
        second.stop()
