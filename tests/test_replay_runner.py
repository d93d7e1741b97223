"""A replay runs on the server's one runner, like every other run: its session holds the lease
``RUN_LEASE_SECONDS`` sets, and stopping the server waits for its background work (the evidence
score), as it does for a chat's."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest

from persistence import repository as repo
from tests.support.kb import started_services

LEASE_S = 97.0  # not the default (30 s), so a run that ignores the setting shows
SIMPLE = "ERR_TIMEOUT 是什么意思"


@pytest.fixture(scope="module")
async def stack(tmp_path_factory, embeddings):  # noqa: ANN001, ANN201
    async with started_services(
        tmp_path_factory.mktemp("replay-runner"), embeddings, run_lease_seconds=LEASE_S
    ) as svc:
        yield svc


async def _recorded(stack) -> str:  # noqa: ANN001
    runner = stack.runner()
    original = await runner.run(SIMPLE)
    await runner.drain()
    assert original.status == "SUCCESS", original.error
    return original.session_id


async def test_a_replay_is_leased_for_run_lease_seconds(stack, monkeypatch) -> None:  # noqa: ANN001
    session_id = await _recorded(stack)
    leases: dict[str, float] = {}
    create = repo.create_session

    async def create_and_note(db: Any, **fields: Any) -> Any:
        held = fields["lease_until"] - fields["heartbeat_at"]
        leases[fields["session_id"]] = held.total_seconds()
        return await create(db, **fields)

    monkeypatch.setattr(repo, "create_session", create_and_note)
    rerun = await stack.replayer().rerun(session_id)
    travelled = await stack.replayer().from_checkpoint(
        session_id, (await stack.replayer().checkpoints(session_id))[0]["checkpoint_id"]
    )
    assert rerun["identical"] is True and travelled.status == "SUCCESS"
    assert leases[rerun["replay_session_id"]] == LEASE_S
    assert leases[travelled.session_id] == LEASE_S


async def test_stopping_the_server_waits_for_a_replays_evidence_score(stack, monkeypatch) -> None:  # noqa: ANN001
    from server import create_app

    session_id = await _recorded(stack)
    update = repo.update_session

    async def slowly(db: Any, sid: str, **fields: Any) -> Any:  # as on a loaded machine
        if "self_evaluation" in fields:
            await asyncio.sleep(1.0)
        return await update(db, sid, **fields)

    monkeypatch.setattr(repo, "update_session", slowly)
    app = create_app(services=stack)
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://test", timeout=120) as c:
            answer = await c.post(f"/api/sessions/{session_id}/replay", json={})
    # The server has stopped: the replay's record is complete, its score included.
    assert answer.status_code == 200, answer.text
    replayed = answer.json()["replaySessionId"]
    async with stack.db.session() as db:
        row = await repo.get_session(db, replayed)
    assert row.status == "SUCCESS" and row.replay_of == session_id
    assert row.self_evaluation is not None, "the shutdown did not wait for the replay's score"
    assert row.self_evaluation["evidence_score"] > 0
