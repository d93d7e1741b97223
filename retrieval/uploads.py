"""Import results and the checks and file writes behind an upload. Pure apart from the file I/O."""

from __future__ import annotations

import re
import uuid
from dataclasses import asdict, dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from retrieval.documents import CATEGORY_RE
from retrieval.errors import FileTooLarge, InvalidUpload, UnsupportedFileType

ALLOWED_SUFFIXES = (".md", ".markdown", ".txt")


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
        raise InvalidUpload(f"file name {name!r} is not usable; send a name like runbook.md")
    if not base.lower().endswith(ALLOWED_SUFFIXES):
        raise UnsupportedFileType(
            f"{name!r}: only {', '.join(ALLOWED_SUFFIXES)} files can be imported"
        )
    return base[:200]


def inside(path: Path, folder: Path) -> bool:
    return path.resolve().is_relative_to(folder.resolve())


def atomic_write(target: Path, data: bytes) -> None:
    """Write beside the target, then rename: a reader never sees half a file."""
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.{uuid.uuid4().hex}.tmp")
    tmp.write_bytes(data)
    tmp.replace(target)


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
            f"{filename!r} is {size} bytes; the limit is {max_bytes} bytes (MAX_UPLOAD_MB)"
        )
    return f"{category}/{name}", category
