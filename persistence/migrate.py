"""Alembic, driven from code: upgrade to head and check the schema against the models."""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.config import Config
from alembic.migration import MigrationContext
from sqlmodel import SQLModel

from persistence import models  # noqa: F401  (registers the tables on SQLModel.metadata)
from persistence.db import create_engine

metadata = SQLModel.metadata
MIGRATIONS_DIR = Path(__file__).parent / "migrations"


def compare_type(
    context: Any, inspected: Any, metadata_col: Any, inspected_type: Any, metadata_type: Any
) -> bool | None:
    """MariaDB stores JSON as LONGTEXT + CHECK(json_valid); that is the JSON type, not drift."""
    if isinstance(metadata_type, sa.JSON) and isinstance(inspected_type, sa.Text):
        return False
    return None  # fall back to Alembic's own comparison


def alembic_config(url: str) -> Config:
    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS_DIR))
    # ConfigParser treats % as interpolation; a password may contain it.
    cfg.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    return cfg


def _outside_loop(fn: Any, *args: Any) -> None:
    """Alembic's env runs its own event loop; from inside a running loop, run it on a thread."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        fn(*args)
        return
    with ThreadPoolExecutor(max_workers=1) as pool:
        pool.submit(fn, *args).result()


def upgrade(url: str, revision: str = "head") -> None:
    """Blocking. Safe to call from sync code or (blocking the loop briefly) from async code."""
    _outside_loop(command.upgrade, alembic_config(url), revision)


def downgrade(url: str, revision: str = "base") -> None:
    _outside_loop(command.downgrade, alembic_config(url), revision)


def _diff(conn: sa.Connection) -> list[Any]:
    ctx = MigrationContext.configure(conn, opts={"compare_type": compare_type})
    return compare_metadata(ctx, metadata)


async def schema_drift(url: str) -> list[Any]:
    """Differences between the models and the live schema; empty when they agree."""
    engine = create_engine(url)
    try:
        async with engine.connect() as conn:
            return await conn.run_sync(_diff)
    finally:
        await engine.dispose()


def drift(url: str) -> list[Any]:
    return asyncio.run(schema_drift(url))
