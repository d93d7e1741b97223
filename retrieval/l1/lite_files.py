"""Milvus Lite's files of one collection, checked without opening them, and set aside when damaged.

Milvus Lite (3.2) keeps a collection under ``<uri>/collections/<name>/``: ``schema.json``, a
``manifest.json`` (``manifest.json.prev`` is its fallback) listing each partition's Parquet data and
delta files, and index sidecars under ``partitions/<p>/indexes/``. A truncated or garbled file
makes opening the collection fail on every call — forever, it never heals — so such files are found
here by reading only what proves them whole: JSON parses, Parquet footers, ``.npy`` headers against
their size. Data files are written whole before the manifest lists them and are never changed
after, so a listed file that fails is damaged, not half-written (index sidecars may be written
while a server runs: they are checked only before Milvus Lite opens the folder).

A damaged collection is moved, never deleted, to ``<uri>.damaged-<time>/collections/<name>`` (the
layout kept, so it can be inspected or opened with Milvus Lite), and the store is rebuilt from the
documents (``retrieval/repair/store_rebuild.py``).
"""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path
from typing import Any

NPY_MAGIC = b"\x93NUMPY"


def collection_folder(uri: str, collection: str) -> Path:
    return Path(os.path.abspath(uri)) / "collections" / collection


def damaged_files(uri: str, collection: str, *, indexes: bool = True) -> list[str]:
    """What is damaged in the collection's files ("<file>: why"), [] when whole or absent.
    ``indexes``: check the index sidecars too (only while no Milvus Lite has the folder open)."""
    folder = collection_folder(uri, collection)
    if not folder.is_dir():
        return []
    bad: list[str] = []
    manifest = _manifest(folder, bad)
    if (folder / "schema.json").exists() and (why := _json_problem(folder / "schema.json")):
        bad.append(f"schema.json: {why}")
    for partition, entry in (manifest or {}).get("partitions", {}).items():
        base = folder / "partitions" / partition
        for rel in [*entry.get("data_files", []), *entry.get("delta_files", [])]:
            if why := _parquet_problem(base / rel):
                bad.append(f"partitions/{partition}/{rel}: {why}")
        if indexes and (base / "indexes").is_dir():
            for sidecar in sorted((base / "indexes").iterdir()):
                if why := _npy_problem(sidecar):
                    bad.append(f"partitions/{partition}/indexes/{sidecar.name}: {why}")
    return bad


def _manifest(folder: Path, bad: list[str]) -> dict[str, Any] | None:
    """The manifest Milvus Lite would use: ``manifest.json``, else the previous one."""
    problems = []
    for name in ("manifest.json", "manifest.json.prev"):
        path = folder / name
        if not path.exists():
            continue
        try:
            return json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            problems.append(f"{name}: {_reason(exc)}")
    bad.extend(problems)  # both unreadable (a folder with neither is not a collection yet)
    return None


def _json_problem(path: Path) -> str | None:
    try:
        json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        return _reason(exc)
    return None


def _parquet_problem(path: Path) -> str | None:
    import pyarrow.parquet as pq

    if not path.is_file():
        return "missing"
    try:
        pq.read_metadata(path)  # the footer: what a truncated or overwritten file loses first
    except Exception as exc:  # pyarrow raises ArrowInvalid, OSError, … for a damaged file
        return _reason(exc)
    return None


def _npy_problem(path: Path) -> str | None:
    """A brute-force (FLAT) sidecar is an ``.npy`` array: its header says how long it must be."""
    import numpy as np

    if path.suffix != ".idx" or ".flat." not in path.name:
        return None  # other index types (FAISS, sparse) have their own formats: not checked
    try:
        with path.open("rb") as f:
            if f.read(len(NPY_MAGIC)) != NPY_MAGIC:
                return "not an index file (no .npy header)"
        np.load(path, mmap_mode="r", allow_pickle=False)  # raises when shorter than its header says
    except Exception as exc:
        return _reason(exc)
    return None


def _reason(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    if "magic bytes not found" in text or "not fully written" in text or "mmap length" in text:
        return "truncated or overwritten"
    return f"unreadable ({text[:160]})"


def set_aside(uri: str, collection: str) -> Path:
    """Move the collection's folder out of Milvus Lite's way (the caller has closed it); returns
    where it went. Nothing is deleted."""
    stamp = time.strftime("%Y%m%d-%H%M%S")
    root = Path(f"{os.path.abspath(uri)}.damaged-{stamp}")
    n = 1
    while (root / "collections" / collection).exists():
        n += 1
        root = Path(f"{os.path.abspath(uri)}.damaged-{stamp}-{n}")
    dest = root / "collections" / collection
    dest.parent.mkdir(parents=True, exist_ok=True)
    shutil.move(str(collection_folder(uri, collection)), str(dest))
    return root


def release(uri: str) -> None:
    """Stop this process's Milvus Lite server of ``uri`` (pymilvus keeps one per path and would
    go on serving what it loaded); the next connection starts a new one on the folder."""
    try:
        from milvus_lite.server_manager import server_manager_instance
    except ImportError:  # another milvus_lite layout: nothing of it runs here
        return
    server_manager_instance.release_server(uri)
