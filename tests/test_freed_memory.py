"""glibc's heaps capped at start (issue 20): threads share ``ARENAS`` heaps, not one each.

Each case runs in a fresh interpreter (arenas, once made, stay for the process' life) whose
threads allocate at the same time; glibc's ``malloc_info`` lists the heaps it made.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from retrieval.l1 import freed_memory

ROOT = Path(__file__).resolve().parent.parent
THREADS = 6

pytestmark = pytest.mark.skipif(
    freed_memory._LIBC is None or not sys.platform.startswith("linux"), reason="glibc only"
)

HEAPS = """
import ctypes, sys, tempfile, threading
how, threads = sys.argv[1], int(sys.argv[2])
if how == "cap_heaps":
    from retrieval.l1.freed_memory import cap_heaps
    assert cap_heaps() and cap_heaps()  # idempotent
elif how == "cap_heaps_env":
    from retrieval.l1.freed_memory import cap_heaps
    assert not cap_heaps()
elif how == "create_app":
    from server import create_app
    from settings import Settings
    create_app(Settings())
libc = ctypes.CDLL("libc.so.6")
libc.malloc.restype, libc.malloc.argtypes = ctypes.c_void_p, [ctypes.c_size_t]
libc.free.argtypes = [ctypes.c_void_p]
libc.fopen.restype = ctypes.c_void_p
libc.malloc_info.argtypes, libc.fclose.argtypes = [ctypes.c_int, ctypes.c_void_p], [ctypes.c_void_p]
together = threading.Barrier(threads)
def work():
    block = libc.malloc(4096)  # this thread's first allocation picks its heap
    together.wait()  # all alive at once: no thread can take over a finished one's heap
    libc.free(block)
workers = [threading.Thread(target=work) for _ in range(threads)]
for w in workers: w.start()
for w in workers: w.join()
with tempfile.NamedTemporaryFile(suffix=".xml") as f:
    fp = libc.fopen(f.name.encode(), b"w")
    libc.malloc_info(0, fp)
    libc.fclose(fp)
    print(open(f.name).read())
"""


def heaps(how: str, **env: str) -> int:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("MALLOC_", "GLIBC_TUN"))}
    done = subprocess.run(
        [sys.executable, "-c", HEAPS, how, str(THREADS)],
        cwd=ROOT,
        env={**clean, "PYTHONPATH": str(ROOT), **env},
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return len(re.findall(r"<heap nr=", done.stdout))


def test_threads_get_a_heap_each_by_default() -> None:
    assert heaps("none") >= THREADS  # the main thread's and (nearly) one per thread


def test_cap_heaps_makes_threads_share() -> None:
    assert heaps("cap_heaps") <= freed_memory.ARENAS


def test_create_app_caps_the_heaps(tmp_path: Path) -> None:
    """The server caps them itself, first thing (``python -m server``, ``uvicorn --factory``)."""
    env = {"DATA_DIR": str(tmp_path), "CONFIG_FILE": str(tmp_path / "absent.yaml")}
    assert heaps("create_app", **env) <= freed_memory.ARENAS


@pytest.mark.parametrize(
    ("name", "value"),
    [("MALLOC_ARENA_MAX", "64"), ("GLIBC_TUNABLES", "glibc.malloc.arena_max=64")],
)
def test_an_operators_arena_max_is_left_alone(
    monkeypatch: pytest.MonkeyPatch, name: str, value: str
) -> None:
    monkeypatch.setenv(name, value)
    assert freed_memory.cap_heaps() is False
    assert heaps("cap_heaps_env", **{name: value}) >= THREADS
