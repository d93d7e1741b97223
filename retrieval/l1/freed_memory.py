"""Handing freed heap memory back to the system (glibc's ``malloc_trim`` and heap caps).

Large temporaries (a batch's activations, a parsed 5 MB document, its chunks and their gRPC
payloads) are freed into glibc's heaps, which keep them: without a trim the server's resident set
stays hundreds of MB above what it uses (issues 17 and 20, ``bench/bench_memory.py``).

A trim cannot return everything: glibc gives each thread that allocates (``asyncio.to_thread``,
gRPC, the embedding threads) a heap ("arena") of its own, up to 8 per CPU, and freed memory
scattered over many arenas stays resident. ``cap_heaps`` limits the arenas at process start.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
from collections.abc import Callable

# mallopt parameters (glibc's malloc.h)
M_ARENA_MAX = -8
# All threads share this many heaps. 2: after the large documents of bench_memory.py the resident
# set was ~1.20x start-up's (median of 5) against 1.37-1.57x with glibc's default of 8 per CPU
# (docs/retrieval.md, section 7).
ARENAS = 2


def _libc() -> ctypes.CDLL | None:
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        libc.malloc_trim, libc.mallopt  # noqa: B018 - glibc's, not another C library's
    except (OSError, AttributeError):
        return None
    return libc


_LIBC = _libc()


def _libc_trim() -> Callable[[], None]:
    """glibc's ``malloc_trim(0)``, or nothing where there is no glibc."""
    if _LIBC is None:
        return lambda: None
    trim = _LIBC.malloc_trim
    trim.argtypes = [ctypes.c_size_t]
    return lambda: trim(0)


# After one embedding batch of 2,048 tokens the resident set stayed ~160 MB higher (measured).
release_freed_memory = _libc_trim()


def release_memory(model: object) -> None:
    """Freed heap memory back to the system, with what ``model`` holds beyond it when it can
    (``CachedEmbeddings.release_memory``; a hosted or custom model has no such method)."""
    getattr(model, "release_memory", release_freed_memory)()


def _set_by_operator(env: str, tunable: str) -> bool:
    return env in os.environ or f"glibc.malloc.{tunable}" in os.environ.get("GLIBC_TUNABLES", "")


def cap_heaps(arenas: int = ARENAS) -> bool:
    """Limit glibc to ``arenas`` heaps for all threads; call it before the process starts threads
    (arenas already made stay). Leaves alone what the environment set (``MALLOC_ARENA_MAX`` or
    ``GLIBC_TUNABLES=glibc.malloc.arena_max=…``). Idempotent; ``False`` where there is no glibc or
    the environment decided."""
    if _LIBC is None or _set_by_operator("MALLOC_ARENA_MAX", "arena_max"):
        return False
    mallopt = _LIBC.mallopt
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    return bool(mallopt(M_ARENA_MAX, arenas))
