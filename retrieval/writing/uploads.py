"""Import results and the checks and file writes behind an upload. No database access of its own."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import re
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from retrieval.parsing.documents import CATEGORY_RE
from retrieval.writing.errors import FileTooLarge, InvalidUpload, StorageFull, UnsupportedFileType
from retrieval.writing.failures import DISK_FULL, describe

log = logging.getLogger(__name__)

ALLOWED_SUFFIXES = (".md", ".markdown", ".txt")
# File systems allow 255 bytes per name; the temporary name written first adds 38 to it.
MAX_NAME_BYTES = 200


@dataclass
class FileResult:
    file_path: str
    status: str  # INDEXED | FAILED | SKIPPED | REMOVED
    doc_id: str | None = None
    chunks: int = 0
    error: str | None = None
    warnings: list[str] = field(default_factory=list)
    derived: list[str] = field(default_factory=list)
    duration_ms: float = 0.0


@dataclass
class ImportReport:
    results: list[FileResult] = field(default_factory=list)
    duration_ms: float = 0.0

    def count(self, status: str) -> int:
        return sum(1 for r in self.results if r.status == status)

    def as_dict(self) -> dict[str, Any]:
        return {
            "total": len(self.results),
            "indexed": self.count("INDEXED"),
            "failed": self.count("FAILED"),
            "skipped": self.count("SKIPPED"),
            "removed": self.count("REMOVED"),
            "duration_ms": round(self.duration_ms, 1),
            "files": [asdict(r) for r in self.results],
        }


def sanitize_filename(name: str) -> str:
    """Keep only the base name and safe characters; refuse what would escape the folder."""
    base = PurePosixPath(name.replace("\\", "/")).name.strip()
    base = re.sub(r"[^\w.\-\u4e00-\u9fff]+", "-", base).strip("-")
    if not base or base.startswith(".") or base in {".", ".."}:
        raise InvalidUpload(f"file name {name[:100]!r} is not usable; send a name like runbook.md")
    if not base.lower().endswith(ALLOWED_SUFFIXES):
        raise UnsupportedFileType(
            f"{name[:100]!r}: only {', '.join(ALLOWED_SUFFIXES)} files can be imported"
        )
    # Refused, not shortened: a cut name could collide with another document's (and replace it).
    if (size := len(base.encode())) > MAX_NAME_BYTES:
        raise InvalidUpload(
            f"the file name is {size} bytes long in UTF-8; the limit is {MAX_NAME_BYTES} "
            f"(about {MAX_NAME_BYTES // 3} Chinese characters): rename the file, keeping its "
            "extension"
        )
    return base


def inside(path: Path, folder: Path) -> bool:
    return path.resolve().is_relative_to(folder.resolve())


def remove_file(path: Path, root: Path) -> None:
    """Delete a document's file and the category folders it leaves empty (never ``root``)."""
    path.unlink(missing_ok=True)
    root = root.resolve()
    folder = path.parent.resolve()
    while folder != root and folder.is_relative_to(root):
        try:
            folder.rmdir()  # only succeeds while empty: another document keeps it
        except OSError:
            return
        folder = folder.parent


TEMP_NAME = re.compile(r"^\..+\.[0-9a-f]{32}\.tmp$")
STALE_TEMP_S = 120.0  # an upload's temporary file lives for one database write; older is a crash's


def remove_stale_temps(folder: Path, older_than_s: float = STALE_TEMP_S) -> list[Path]:
    """Delete the temporary files (``write_temp``'s names) a crashed upload left under
    ``folder``. Young ones are kept: another worker may be between its write and its rename."""
    removed: list[Path] = []
    cutoff = time.time() - older_than_s
    for path in folder.rglob(".*.tmp") if folder.is_dir() else ():
        try:
            if TEMP_NAME.match(path.name) and path.is_file() and path.stat().st_mtime < cutoff:
                path.unlink()
                removed.append(path)
        except OSError as exc:  # gone meanwhile, or not ours to delete: leave it
            log.warning("could not remove the stale temporary file %s: %s", path, exc)
    return removed


def write_temp(target: Path, data: bytes) -> Path:
    """Write ``data`` to a hidden file beside ``target`` (the folder scan skips it) and return it;
    renaming it onto ``target`` is then atomic. A failed write leaves nothing behind."""
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.{uuid.uuid4().hex}.tmp")
    try:
        with tmp.open("xb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return tmp


async def store_file(target: Path, data: bytes, record: Callable[[], Awaitable[Any]]) -> None:
    """Write ``target`` together with its database row: a temporary file, then ``record()`` (the
    row), then the rename. A failed write or row leaves no file behind (a stray file would be
    imported by the next folder scan); a failed rename leaves a PENDING row without a file, which
    the next import drops."""
    new_folder = not await asyncio.to_thread(target.parent.exists)
    tmp: Path | None = None
    try:
        tmp = await asyncio.to_thread(write_temp, target, data)
        await record()
        await asyncio.to_thread(tmp.replace, target)
    except OSError as exc:
        log.warning("could not store %s", target, exc_info=True)
        if exc.errno in DISK_FULL:
            raise StorageFull(f"{target.name} was not stored: {describe(exc)}") from None
        raise
    finally:
        if tmp is not None:
            await asyncio.to_thread(tmp.unlink, missing_ok=True)
        if new_folder and not await asyncio.to_thread(target.exists):
            with contextlib.suppress(OSError):
                await asyncio.to_thread(target.parent.rmdir)


RESERVE_BYTES = 1 << 20  # held while an upload is stored; freed to undo it if the disk fills


def reserve(folder: Path, size: int = RESERVE_BYTES) -> Path:
    """Set ``size`` bytes of disk aside (a hidden temporary file, swept after a crash): undoing an
    upload that filled the disk writes too (the row's deletion, the vectors'), and needs room."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f".reserve.{uuid.uuid4().hex}.tmp"
    try:
        with path.open("xb") as f:
            try:
                os.posix_fallocate(f.fileno(), 0, size)
            except OSError as exc:  # a file system without fallocate: real bytes instead
                if exc.errno in DISK_FULL:
                    raise
                f.write(bytes(size))
                f.flush()
                os.fsync(f.fileno())
    except BaseException:
        path.unlink(missing_ok=True)
        raise
    return path


def keep_old(target: Path) -> Path | None:
    """A hard link to the file an upload replaces (no disk space used), under ``write_temp``'s
    name pattern so a crash's leftover is swept; :func:`put_back` restores it."""
    if not target.is_file():
        return None
    backup = target.with_name(f".{target.name}.{uuid.uuid4().hex}.tmp")
    os.link(target, backup)
    return backup


def put_back(target: Path, backup: Path | None, root: Path) -> None:
    """Undo an upload's file: the replaced file comes back, or the new one goes (folders too)."""
    if backup is not None:
        backup.replace(target)
    else:
        remove_file(target, root)


def check_upload(filename: str, category: str, size: int | None, max_bytes: int) -> tuple[str, str]:
    """Validate before anything is written; returns (relative path, category)."""
    category = (category or "").strip().lower()
    if not CATEGORY_RE.match(category):
        raise InvalidUpload(
            f"category {category!r} is not valid: use lowercase letters, digits, '-' or '_' (e.g. infrastructure)"
        )
    name = sanitize_filename(filename)
    if size is not None and size > max_bytes:
        raise FileTooLarge(
            f"{filename[:100]!r} is {size} bytes; the limit is {max_bytes} bytes (MAX_UPLOAD_MB)"
        )
    return f"{category}/{name}", category
