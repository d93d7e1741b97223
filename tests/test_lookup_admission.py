"""Lookups under overload are shed, not queued without end: past the running and waiting bounds a
lookup gets 503 ``overloaded`` with Retry-After at once, every other one 200 — nothing hangs.
(``bench/bench_overload.py`` measures the 200/s case against a real server.)"""

from __future__ import annotations

import asyncio
import time

import httpx
import pytest

from api.admission import Admission
from api.errors import ApiError


async def test_gate_bounds_running_and_waiting() -> None:
    gate = Admission(concurrency=2, queue=3, max_wait_s=5)
    release = asyncio.Event()
    peak = 0

    async def one() -> str:
        nonlocal peak
        try:
            async with gate.slot():
                peak = max(peak, gate.running)
                await release.wait()
            return "ok"
        except ApiError as exc:
            assert exc.status == 503 and exc.code == "overloaded"
            assert int(exc.headers["Retry-After"]) >= 1
            return "shed"

    tasks = [asyncio.create_task(one()) for _ in range(10)]
    await asyncio.sleep(0.05)
    release.set()
    results = await asyncio.gather(*tasks)
    assert results.count("ok") == 5 and results.count("shed") == 5, results  # 2 run + 3 wait
    assert peak == 2


async def test_a_waiting_lookup_gives_up_after_max_wait() -> None:
    gate = Admission(concurrency=1, queue=10, max_wait_s=0.2)
    async with gate.slot():
        t0 = time.monotonic()
        with pytest.raises(ApiError, match="waited"):
            async with gate.slot():
                pass
        assert time.monotonic() - t0 < 2


async def test_lookup_route_sheds_past_its_bounds(client: httpx.AsyncClient) -> None:
    from server import create_app

    svc = client.app.state.services  # type: ignore[attr-defined]
    settings = svc.settings.model_copy(
        update={"lookup_concurrency": 1, "lookup_queue": 2, "lookup_max_wait_s": 5.0}
    )
    app = create_app(settings=settings, services=svc)
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app), base_url="http://test", timeout=120
        ) as c,
    ):
        queries = [f"connection pool timeout {i}" for i in range(30)]
        t0 = time.monotonic()
        rs = await asyncio.gather(
            *(c.post("/api/knowledge/lookup", json={"query": q}) for q in queries)
        )
        took = time.monotonic() - t0
    codes = [r.status_code for r in rs]
    assert set(codes) <= {200, 503} and codes.count(200) >= 1 and codes.count(503) >= 10, codes
    for r in rs:
        if r.status_code == 503:
            assert r.json()["error"] == "overloaded" and int(r.headers["Retry-After"]) >= 1
            assert "LOOKUP_CONCURRENCY" in r.json()["message"]
    assert took < 60, took
