"""``langgraph dev`` must listen on port 2025 here (2024 is taken); the tests that start it take
this lock first, so two of them on two xdist workers (``make test`` runs ``-n 2``) never race
for the port — the second waits for the first to stop its server."""

from __future__ import annotations

import fcntl
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

PORT = 2025
LOCK = Path(tempfile.gettempdir()) / f"superbiz-langgraph-dev-{PORT}.lock"


@contextmanager
def studio_port() -> Iterator[int]:
    fd = os.open(LOCK, os.O_RDWR | os.O_CREAT, 0o666)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # released when the server is stopped (or the worker dies)
        yield PORT
    finally:
        os.close(fd)
