"""Migration 0004_document_metadata on SQLite and MariaDB: documents stored before it get the
default version and stay enabled; it downgrades cleanly."""

from __future__ import annotations

import asyncio

import sqlalchemy as sa

from persistence.db import create_engine
from persistence.migrate import downgrade, schema_drift, upgrade

NEW_COLUMNS = {"fault_source", "api_name", "version", "chunk_size", "chunk_overlap", "enabled"}
OLD_ROW = sa.text(
    "INSERT INTO api_document (doc_id, file_name, file_path, title, category, status, "
    "chunk_count, file_size, created_at, updated_at) VALUES ('d1', 'a.md', 'ops/a.md', 'A', "
    "'ops', 'INDEXED', 3, 10, '2026-11-01 00:00:00', '2026-11-01 00:00:00')"
)


async def _columns(url: str) -> set[str]:
    engine = create_engine(url)
    async with engine.connect() as conn:
        names = await conn.run_sync(
            lambda c: {col["name"] for col in sa.inspect(c).get_columns("api_document")}
        )
    await engine.dispose()
    return names


async def test_0004_adds_the_document_fields_to_existing_rows(empty_db_url: str) -> None:
    await asyncio.to_thread(upgrade, empty_db_url, "0003")
    engine = create_engine(empty_db_url)
    async with engine.begin() as conn:
        await conn.execute(OLD_ROW)
    await engine.dispose()

    await asyncio.to_thread(upgrade, empty_db_url, "0004_document_metadata")
    # Later revisions add other tables and columns; at 0004 the documents table must already agree.
    assert [d for d in await schema_drift(empty_db_url) if "api_document" in repr(d)] == []
    engine = create_engine(empty_db_url)
    async with engine.connect() as conn:
        row = (
            await conn.execute(
                sa.text("SELECT version, enabled, fault_source, chunk_size FROM api_document")
            )
        ).one()
    await engine.dispose()
    assert (row[0], bool(row[1]), row[2], row[3]) == ("v1.0", True, None, None)

    await asyncio.to_thread(downgrade, empty_db_url, "0003")
    assert not NEW_COLUMNS & await _columns(empty_db_url)
    await asyncio.to_thread(upgrade, empty_db_url)
    assert await _columns(empty_db_url) >= NEW_COLUMNS
