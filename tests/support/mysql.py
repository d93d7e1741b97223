"""A fresh MariaDB/MySQL database per test, from the server in ``TEST_MYSQL_URL``."""

from __future__ import annotations

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
