"""A cross-process start-up lock, so several workers starting together on a fresh install do the
first-start work (migrations, first import, domain rows, checkpoint tables) once, one at a time.

MySQL/MariaDB: a named ``GET_LOCK`` held on one connection. SQLite: an ``flock`` on a file beside
the data (workers of one host share it).
"""

from __future__ import annotations

import asyncio
import fcntl
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import sqlalchemy as sa

from persistence.db import create_engine, engine_kind

log = logging.getLogger(__name__)
LOCK_NAME = "superbiz_startup"


@asynccontextmanager
async def startup_lock(
    database_url: str, data_dir: Path, timeout_s: int = 900
) -> AsyncIterator[None]:
    if engine_kind(database_url) == "mysql":
        engine = create_engine(database_url, poolclass=sa.NullPool)
        try:
            async with engine.connect() as conn:
                got = (
                    await conn.execute(
                        sa.text("SELECT GET_LOCK(:n, :t)"), {"n": LOCK_NAME, "t": timeout_s}
                    )
                ).scalar()
                if got != 1:
                    raise TimeoutError(
                        f"another worker held the start-up lock for more than {timeout_s}s"
                    )
                try:
                    yield
                finally:
                    await conn.execute(sa.text("SELECT RELEASE_LOCK(:n)"), {"n": LOCK_NAME})
        finally:
            await engine.dispose()
        return
    path = Path(data_dir) / ".startup.lock"
    await asyncio.to_thread(path.parent.mkdir, parents=True, exist_ok=True)
    handle = await asyncio.to_thread(open, path, "a+")
    try:
        await asyncio.to_thread(fcntl.flock, handle.fileno(), fcntl.LOCK_EX)
        yield
    finally:
        await asyncio.to_thread(fcntl.flock, handle.fileno(), fcntl.LOCK_UN)
        await asyncio.to_thread(handle.close)
