"""The seed's per-document fields: fault source (故障源), API name (接口名称), version (版本, default
v1.0) and the chunking (分块参数). Pure.

They come from the upload form and from the frontmatter (``fault_source``, ``api_name``,
``version``, ``chunk_size``, ``chunk_overlap``; the seed's camelCase spellings are read too). **The
upload form wins**: it is the operator's latest word on this copy of the file, and a frontmatter
value it overrides is named in a warning. What the form gave is kept with the document, so a later
re-import of the same file applies it again.

Chunk size and overlap are counted in the embedding model's own tokens, like
``RETRIEVAL__CHUNK_SIZE``: a chunk must fit the model's window (multilingual-e5-small 508 tokens of a
chunk, MiniLM 254). A size from :data:`MIN_CHUNK_SIZE` up is taken; above the window it is capped to
it with a warning naming both numbers (never silently). The overlap is at most half the given size;
other values are refused with the allowed range.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields, replace
from typing import Any

from persistence.models import DEFAULT_VERSION

__all__ = [
    "DEFAULT_VERSION",
    "ChunkingError",
    "DocFields",
    "check_chunking",
    "chunking_problem",
    "chunking_warnings",
]
MIN_CHUNK_SIZE = 32  # below this a chunk carries too little text to be found (chunking.py's floor)
MAX_LENGTHS = {"fault_source": 128, "api_name": 255, "version": 32}
# frontmatter key → field; the seed wrote camelCase, our frontmatter is snake_case.
FRONTMATTER_KEYS = {
    "fault_source": "fault_source",
    "faultSource": "fault_source",
    "api_name": "api_name",
    "apiName": "api_name",
    "version": "version",
    "chunk_size": "chunk_size",
    "chunkSize": "chunk_size",
    "chunk_overlap": "chunk_overlap",
    "chunkOverlap": "chunk_overlap",
}
WIRE_NAMES = {
    "fault_source": "faultSource",
    "api_name": "apiName",
    "version": "version",
    "chunk_size": "chunkSize",
    "chunk_overlap": "chunkOverlap",
}


class ChunkingError(ValueError):
    """Chunk parameters outside what the embedding model allows; the message gives the range."""


@dataclass(frozen=True)
class DocFields:
    fault_source: str | None = None
    api_name: str | None = None
    version: str | None = None
    chunk_size: int | None = None
    chunk_overlap: int | None = None

    def given(self) -> dict[str, Any]:
        """The fields that have a value (how they are kept in the document's metadata)."""
        return {k: v for k, v in asdict(self).items() if v not in (None, "")}

    @classmethod
    def from_given(cls, data: dict[str, Any] | None) -> DocFields:
        names = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in (data or {}).items() if k in names})

    def over(self, base: DocFields) -> tuple[DocFields, list[str]]:
        """These values over ``base``'s (each one that is set wins), and a warning for each value
        of ``base`` that was overridden by a different one."""
        mine, warnings = self.given(), []
        for name, theirs in base.given().items():
            if name in mine and mine[name] != theirs:
                warnings.append(
                    f"upload {WIRE_NAMES[name]} '{mine[name]}' overrides the frontmatter's "
                    f"'{theirs}'"
                )
        return replace(base, **mine), warnings


def clean_text(value: str | None) -> str | None:
    """Form text: surrounding spaces dropped, empty means not given."""
    value = (value or "").strip()
    return value or None


def chunking_problem(size: int | None, overlap: int | None, default_size: int, window: int) -> str:
    """What is wrong with these chunk parameters ('' when nothing is). ``None`` means the
    configured default. A size above the model's ``window`` is not wrong — it is capped to the
    window with a warning (``chunking_warnings``), so the seed's own defaults (500 / 50) are taken
    whatever model reads them; a size under the minimum, or an overlap over half the size, is."""
    if size is not None and size < MIN_CHUNK_SIZE:
        return (
            f"chunkSize {size} is below {MIN_CHUNK_SIZE}: choose a size from {MIN_CHUNK_SIZE} to "
            f"the embedding model's {window}-token window (larger sizes are capped to it)"
        )
    given = size if size is not None else default_size
    if overlap is not None and not 0 <= overlap <= given // 2:
        return (
            f"chunkOverlap {overlap} is outside 0–{given // 2}: the overlap may be at most "
            f"half the chunk size ({given} tokens); choose a smaller overlap"
        )
    return ""


def chunking_warnings(
    size: int | None, overlap: int | None, default_size: int, window: int
) -> list[str]:
    """The caps applied to valid chunk parameters for a model reading ``window`` tokens."""
    out = []
    if size is not None and size > window:
        out.append(
            f"chunkSize {size} is above the embedding model's {window}-token window: chunks are "
            f"{window} tokens (chunks are counted in the model's own tokens)"
        )
    used = min(size if size is not None else default_size, window)
    if overlap is not None and overlap > used // 2:
        out.append(
            f"chunkOverlap {overlap} is more than half of the {used}-token chunks: "
            f"{used // 2} is used"
        )
    return out


def check_chunking(size: int | None, overlap: int | None, default_size: int, window: int) -> None:
    if problem := chunking_problem(size, overlap, default_size, window):
        raise ChunkingError(problem)
