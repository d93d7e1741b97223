"""Checkpointer factory: ``AsyncSqliteSaver`` by default, ``AsyncMySaver`` (asyncmy pool) on MySQL.

SQLite checkpoints live in their own file beside the records database, so graph writes and record
writes do not contend for one file lock.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from langgraph.checkpoint.base import BaseCheckpointSaver
from sqlalchemy.engine import make_url

from persistence.db import engine_kind


def sqlite_checkpoint_path(database_url: str, data_dir: Path) -> Path:
    db = make_url(database_url).database
    if db and db != ":memory:":
        p = Path(db).expanduser()
        return p.with_name(p.stem + "-checkpoints.db")
    return Path(data_dir) / "checkpoints.db"


class PingingPool:
    """An asyncmy pool that checks each connection before use (reconnecting if the server went away),
    so checkpoints keep working after a database restart — the counterpart of SQLAlchemy's
    ``pool_pre_ping`` for the records engine."""

    def __init__(self, pool: Any) -> None:
        self._pool = pool

    @asynccontextmanager
    async def acquire(self) -> AsyncIterator[Any]:
        async with self._pool.acquire() as conn:
            await conn.ping(reconnect=True)
            yield conn


@asynccontextmanager
async def open_checkpointer(
    database_url: str, data_dir: Path
) -> AsyncIterator[BaseCheckpointSaver]:
    if engine_kind(database_url) == "sqlite":
        from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

        path = sqlite_checkpoint_path(database_url, data_dir)
        await asyncio.to_thread(path.parent.mkdir, parents=True, exist_ok=True)
        async with AsyncSqliteSaver.from_conn_string(str(path)) as saver:
            await saver.setup()
            yield saver
        return

    import asyncmy
    from langgraph.checkpoint.mysql.asyncmy import AsyncMySaver

    u = make_url(database_url)
    pool = await asyncmy.create_pool(
        host=u.host or "localhost",
        port=u.port or 3306,
        user=u.username,
        password=u.password or "",
        db=u.database,
        autocommit=True,
        minsize=1,
        maxsize=10,
        pool_recycle=3600,
    )
    try:
        saver = AsyncMySaver(conn=PingingPool(pool))
        await saver.setup()
        yield saver
    finally:
        pool.close()
        await pool.wait_closed()
