"""Async engine and session factory for ``sqlite+aiosqlite`` and ``mysql+asyncmy``."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects import mysql, sqlite
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import (
    AsyncEngine,
    AsyncSession,
    async_sessionmaker,
    create_async_engine,
)

from persistence.dberrors import describe
from persistence.models import WriteProbe, utcnow

log = logging.getLogger(__name__)
PROBE_TIMEOUT_S = 2.0  # /healthz answers within about this, even on a locked or stalled database
SQLITE_BUSY_MS = 30000  # how long a write waits for another writer's lock
PROBE_CACHE_S = 5.0  # /healthz may be polled every second; one write per few seconds proves enough


def _json_dumps(value: Any) -> str:
    # Keep Chinese readable in the column instead of \\uXXXX escapes.
    return json.dumps(value, ensure_ascii=False, default=str)


def engine_kind(url: str) -> str:
    return "sqlite" if make_url(url).get_backend_name() == "sqlite" else "mysql"


def ensure_sqlite_dir(url: str) -> None:
    """SQLite creates the file but not its folder; make the folder so first start just works."""
    u = make_url(url)
    if u.get_backend_name() == "sqlite" and u.database and u.database != ":memory:":
        Path(u.database).expanduser().parent.mkdir(parents=True, exist_ok=True)


def _mysql_url(url: str) -> sa.URL:
    u = make_url(url)
    if "charset" not in u.query:
        u = u.update_query_dict({"charset": "utf8mb4"})
    return u


def create_engine(url: str, **kwargs: Any) -> AsyncEngine:
    """An engine configured the same way everywhere: utf8mb4 on MySQL, WAL + FKs on SQLite."""
    if engine_kind(url) == "sqlite":
        ensure_sqlite_dir(url)
        engine = create_async_engine(
            url,
            json_serializer=_json_dumps,
            connect_args={"timeout": 30},
            **kwargs,
        )

        @sa.event.listens_for(engine.sync_engine, "connect")
        def _sqlite_pragmas(dbapi_conn: Any, _record: Any) -> None:
            cur = dbapi_conn.cursor()
            # WAL lets the server read while an import writes; busy_timeout rides out short locks.
            cur.execute("PRAGMA journal_mode=WAL")
            cur.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_MS}")
            # In WAL mode NORMAL syncs at checkpoints, not on every commit: 8 ms → 0.02 ms per
            # commit here (an import commits twice per file). A power loss may undo the last
            # commits; the database stays consistent and the files re-import.
            cur.execute("PRAGMA synchronous=NORMAL")
            cur.execute("PRAGMA foreign_keys=ON")
            cur.close()

        return engine
    kwargs.setdefault("pool_pre_ping", True)
    kwargs.setdefault("pool_recycle", 3600)
    return create_async_engine(_mysql_url(url), json_serializer=_json_dumps, **kwargs)


def is_database_error(exc: BaseException) -> bool:
    """A failure of the database or its driver, as SQLAlchemy raises it."""
    return isinstance(exc, sa.exc.SQLAlchemyError)


def session_factory(engine: AsyncEngine) -> async_sessionmaker[AsyncSession]:
    return async_sessionmaker(engine, expire_on_commit=False)


class Database:
    """Owns the engine and hands out sessions; one per process."""

    def __init__(self, url: str, **engine_kwargs: Any) -> None:
        self.url = url
        self.kind = engine_kind(url)
        self.engine = create_engine(url, **engine_kwargs)
        self.sessions = session_factory(self.engine)
        self._write_probe: tuple[float, str | None] | None = None

    @asynccontextmanager
    async def session(self) -> AsyncIterator[AsyncSession]:
        async with self.sessions() as s:
            yield s

    async def ping(self) -> bool:
        """Does the database answer at all (within PROBE_TIMEOUT_S)?"""
        try:
            await asyncio.wait_for(self._select_one(), PROBE_TIMEOUT_S)
            return True
        except Exception:
            return False

    async def _select_one(self) -> None:
        async with self.engine.connect() as conn:
            await conn.execute(sa.text("SELECT 1"))

    async def write_failure(self) -> str | None:
        """None when the database accepts writes, else what is wrong in words. Rewrites one probe
        row: a read-only file or a full disk still answers ``SELECT 1``. Cached a few seconds."""
        now = time.monotonic()
        if self._write_probe and now - self._write_probe[0] < PROBE_CACHE_S:
            return self._write_probe[1]
        values = {"id": 1, "written_by": f"pid {os.getpid()}", "written_at": utcnow()}
        table = WriteProbe.__table__  # type: ignore[attr-defined]
        if self.kind == "mysql":
            stmt = mysql.insert(table).values(values)
            stmt = stmt.on_duplicate_key_update(
                written_by=values["written_by"], written_at=values["written_at"]
            )
        else:
            stmt = sqlite.insert(table).values(values)
            stmt = stmt.on_conflict_do_update(index_elements=["id"], set_=values)
        failure: str | None = None
        try:
            await asyncio.wait_for(self._probe_write(stmt), PROBE_TIMEOUT_S)
        except TimeoutError:
            log.warning("the database write probe got no answer within %s s", PROBE_TIMEOUT_S)
            failure = (
                f"the database did not answer a write within {PROBE_TIMEOUT_S:g} s (locked by "
                "another process, or overloaded)"
            )
        except Exception as exc:
            log.warning("the database write probe failed: %s", exc)
            failure = describe(exc) or "the database does not accept writes (see the server log)"
        self._write_probe = (now, failure)
        return failure

    async def _probe_write(self, stmt: Any) -> None:
        # A locked SQLite file would hold the probe for the whole busy timeout (30 s); the probe
        # waits for the lock only as long as /healthz may take, then says so.
        async with self.engine.connect() as conn:
            if self.kind == "sqlite":
                await conn.exec_driver_sql(f"PRAGMA busy_timeout={int(PROBE_TIMEOUT_S * 750)}")
            try:
                await conn.execute(stmt)
                await conn.commit()
            except BaseException:
                with contextlib.suppress(Exception):
                    await conn.rollback()
                raise
            finally:
                if self.kind == "sqlite":  # the pooled connection goes back as it came
                    with contextlib.suppress(Exception):
                        await conn.exec_driver_sql(f"PRAGMA busy_timeout={SQLITE_BUSY_MS}")

    async def dispose(self) -> None:
        await self.engine.dispose()
