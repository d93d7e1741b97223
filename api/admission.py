"""Admission control for lookups: bounded concurrency, a bounded queue, 503 + Retry-After past it.

Without it, a burst of lookups queues without limit in the thread pool: at 200 lookups/s offered
on two cores the server served 14/s, p99 7.6 s, and thousands never got an answer. Here at most
``concurrency`` lookups run at once, at most ``queue`` more wait — each no longer than
``max_wait_s`` — and anything past that is told at once to come back (``503 overloaded`` with
``Retry-After``), so every request gets an answer within a few seconds. One gate per worker
process; with several workers each sheds its own excess. Refusals show on ``/metrics`` as 503s of
the route.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
from collections.abc import AsyncIterator

from api.errors import ApiError


class Admission:
    def __init__(self, concurrency: int, queue: int, max_wait_s: float) -> None:
        self.concurrency, self.queue, self.max_wait_s = concurrency, queue, max_wait_s
        self._slots = asyncio.Semaphore(concurrency)
        self.waiting = 0
        self.running = 0
        self.shed = 0

    def _refuse(self, why: str) -> ApiError:
        self.shed += 1
        retry = max(1, math.ceil(self.max_wait_s))
        return ApiError(
            503,
            "overloaded",
            f"too many lookups at once ({why}); retry in {retry} s — the server answers "
            f"{self.concurrency} at a time with {self.queue} waiting (LOOKUP_CONCURRENCY, "
            "LOOKUP_QUEUE)",
            {"Retry-After": str(retry)},
        )

    @contextlib.asynccontextmanager
    async def slot(self) -> AsyncIterator[None]:
        if not self._slots.locked():
            await self._slots.acquire()  # a free slot: taken without yielding
        else:
            if self.waiting >= self.queue:
                raise self._refuse(f"{self.waiting} already waiting")
            self.waiting += 1
            try:
                await asyncio.wait_for(self._slots.acquire(), self.max_wait_s)
            except TimeoutError:
                raise self._refuse(f"waited {self.max_wait_s:g} s for a free slot") from None
            finally:
                self.waiting -= 1
        self.running += 1
        try:
            yield
        finally:
            self.running -= 1
            self._slots.release()
