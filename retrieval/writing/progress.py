"""Import progress between files: while a window of files is embedded (one batch, minutes for a big
file), the import reports each slice of chunks, so a progress bar moves before the first file ends.

Event: ``{"event": "chunks", "done", "total", "files", "first", "last", "of"}`` — ``done`` of
``total`` chunks of files ``first``..``last`` (1-based, of ``of``) are embedded."""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import Callable
from typing import Any

log = logging.getLogger(__name__)

Progress = Callable[[dict[str, Any]], Any]  # an import's listener: plain or async


async def emit(progress: Progress | None, event: dict[str, Any]) -> None:
    if progress is None:
        return
    out = progress(event)
    if inspect.isawaitable(out):
        await out


def embedding_progress(
    progress: Progress | None, files: list[str], start: int, total: int
) -> Callable[[int, int], None] | None:
    """A callback for the embedding thread that hands each report to ``progress`` on this loop."""
    if progress is None:
        return None
    loop = asyncio.get_running_loop()

    def embedded(done: int, chunks: int) -> None:
        event = {"event": "chunks", "done": done, "total": chunks, "files": files}
        event |= {"first": start + 1, "last": start + len(files), "of": total}
        if not loop.is_closed():
            asyncio.run_coroutine_threadsafe(emit(progress, event), loop)

    return embedded
