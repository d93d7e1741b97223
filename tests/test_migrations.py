import asyncio

import sqlalchemy as sa

from persistence.db import create_engine
from persistence.migrate import downgrade, schema_drift, upgrade

TABLES = {
    "diagnosis_session",
    "agent_step",
    "tool_invocation",
    "api_document",
    "knowledge_domain",
    "case_library",
    "knowledge_state",
}


async def _tables(url: str) -> set[str]:
    engine = create_engine(url)
    async with engine.connect() as conn:
        names = await conn.run_sync(lambda c: set(sa.inspect(c).get_table_names()))
    await engine.dispose()
    return names


async def test_upgrade_empty_database_to_head_without_drift(empty_db_url: str) -> None:
    assert await _tables(empty_db_url) == set()
    await asyncio.to_thread(upgrade, empty_db_url)
    assert await _tables(empty_db_url) >= TABLES
    assert await schema_drift(empty_db_url) == []


async def test_downgrade_then_upgrade_round_trips(empty_db_url: str) -> None:
    await asyncio.to_thread(upgrade, empty_db_url)
    await asyncio.to_thread(downgrade, empty_db_url, "base")
    assert await _tables(empty_db_url) <= {"alembic_version"}
    await asyncio.to_thread(upgrade, empty_db_url)
    assert await schema_drift(empty_db_url) == []


async def test_drift_is_detected(empty_db_url: str) -> None:
    """The drift check can fail: a column the models do not know shows up as a difference."""
    await asyncio.to_thread(upgrade, empty_db_url)
    engine = create_engine(empty_db_url)
    async with engine.begin() as conn:
        await conn.execute(sa.text("ALTER TABLE case_library ADD COLUMN stray INTEGER"))
    await engine.dispose()
    diffs = await schema_drift(empty_db_url)
    assert any("stray" in str(d) for d in diffs)
