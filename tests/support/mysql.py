"""MariaDB/MySQL databases for tests, from the server in ``TEST_MYSQL_URL``: a fresh one per test,
or the worker's one migrated database, emptied for each test (migrating costs seconds of DDL)."""

from __future__ import annotations

import asyncio
import os
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import create_async_engine

MYSQL_SKIP = (
    "MySQL tests need a server: set TEST_MYSQL_URL=mysql+asyncmy://root:@127.0.0.1:3306/test "
    "(any user allowed to CREATE/DROP DATABASE); .ci/run does this against the local MariaDB."
)


def mysql_server_url() -> str | None:
    return os.environ.get("TEST_MYSQL_URL") or None


def require_mysql() -> str:
    """The server URL, or skip the test with the hint how to provide one."""
    server = mysql_server_url()
    if not server:
        pytest.skip(MYSQL_SKIP)
    return server


async def create_mysql_db(server_url: str) -> str:
    name = f"sbtest_{uuid.uuid4().hex[:12]}"
    admin = create_async_engine(make_url(server_url))
    async with admin.begin() as conn:
        await conn.execute(sa.text(f"CREATE DATABASE `{name}` CHARACTER SET utf8mb4"))
    await admin.dispose()
    return make_url(server_url).set(database=name).render_as_string(hide_password=False)


async def drop_mysql_db(server_url: str, url: str) -> None:
    admin = create_async_engine(make_url(server_url))
    async with admin.begin() as conn:
        await conn.execute(sa.text(f"DROP DATABASE IF EXISTS `{make_url(url).database}`"))
    await admin.dispose()


@asynccontextmanager
async def fresh_mysql_db() -> AsyncIterator[str]:
    """A new, empty MariaDB/MySQL database, dropped afterwards; skips the test when none is set up."""
    server = require_mysql()
    url = await create_mysql_db(server)
    try:
        yield url
    finally:
        await drop_mysql_db(server, url)


class MigratedMySQL:
    """One database per worker, migrated to head on first use; each use gets it with no rows.

    Migrating a MariaDB database is seconds of DDL (measured: ~4 s, against ~0.1 s to empty it), so
    the tests that only need a database at head share this one instead of migrating their own."""

    def __init__(self) -> None:
        self._url: str | None = None

    async def emptied(self) -> str:
        """The migrated database's URL, every row of every table deleted (the schema left as is)."""
        server = require_mysql()
        if self._url is None:
            from persistence.migrate import upgrade

            url = await create_mysql_db(server)
            try:
                await asyncio.to_thread(upgrade, url)
            except BaseException:
                await drop_mysql_db(server, url)
                raise
            self._url = url
        await delete_every_row(self._url)
        return self._url

    async def drop(self) -> None:
        if self._url is not None:
            await drop_mysql_db(require_mysql(), self._url)
            self._url = None


async def delete_every_row(url: str) -> None:
    """Empty every table but ``alembic_version`` (tables a test created, e.g. checkpoints, too)."""
    engine = create_async_engine(make_url(url))
    try:
        async with engine.begin() as conn:
            names = (
                await conn.execute(
                    sa.text(
                        "SELECT table_name FROM information_schema.tables WHERE "
                        "table_schema = DATABASE() AND table_name != 'alembic_version'"
                    )
                )
            ).scalars()
            await conn.execute(sa.text("SET FOREIGN_KEY_CHECKS = 0"))
            for name in list(names):
                await conn.execute(sa.text(f"DELETE FROM `{name}`"))
            await conn.execute(sa.text("SET FOREIGN_KEY_CHECKS = 1"))
    finally:
        await engine.dispose()
