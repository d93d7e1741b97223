"""A run whose record the database refused — it went away, turned read-only or stayed locked:
the record is written once the database takes it again, with the run's true outcome, and until
then this process's sweep leaves the session alone (``persistence.leases.closing_here``), so it is
never shown as "interrupted: the worker stopped" while the worker is alive and waiting."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import TypeVar

from persistence.leases import closing_here

log = logging.getLogger(__name__)
T = TypeVar("T")
RETRY_FOR_S = 600  # how long a record the database refused is retried in the background
MAX_DELAY_S = 5.0  # once the database is back, the record is written within about this


async def when_back(session_id: str, write: Callable[[], Awaitable[T]], what: str) -> T | None:
    """Retry ``write`` (a session's closing or removal, ``what``) until the database takes it;
    its result, or None when it still refuses after ``RETRY_FOR_S`` (logged)."""
    with closing_here(session_id):
        delay, waited = 1.0, 0.0
        while waited < RETRY_FOR_S:
            await asyncio.sleep(delay)
            waited += delay
            try:
                return await write()
            except Exception:
                delay = min(delay * 2, MAX_DELAY_S)
    log.error(
        "session %s could not be %s within %d s; once its lease runs out and the database accepts "
        "writes, the sweep closes it as interrupted (resumable)",
        session_id,
        what,
        RETRY_FOR_S,
    )
    return None
