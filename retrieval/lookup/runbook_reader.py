"""Reading a runbook's whole text by the path a lookup cited, for answers and reports that quote
its sections (a lookup result carries only excerpts), and for the lookup's own summaries and L0
claim check (``knowledge.py``).

Only files inside the knowledge-base folder are read (a path from a tool result never leaves it),
and ``document_reader`` only documents the catalog holds (an answer cites only documents in the
base); a file gone or unparsable reads as None and the caller falls back to the lookup's excerpt.
"""

from __future__ import annotations

import logging
import stat
from collections.abc import Callable
from functools import lru_cache
from pathlib import Path
from typing import Any

from retrieval.parsing.documents import DocumentError, parse_document

log = logging.getLogger(__name__)
CACHED_BODIES = 128
CACHED_BYTES = 64 * 1024  # so the kept bodies are a few MB at most
BodyReader = Callable[[str], "str | None"]  # path → Markdown body
Reader = Callable[[str], "tuple[str, str] | None"]  # path → (title, Markdown body)


def runbook_reader(folder: str | Path) -> BodyReader:
    """The body of ``path`` inside ``folder``, or None.

    Bodies of files up to ``CACHED_BYTES`` are kept by file state (size, mtime): a lookup reads up
    to nine (``l0_claim``'s check, the PRECISE summary), and parsing one took ~2 ms of a ~5 ms
    keyword lookup (issue 17). A changed file is read anew."""
    root = Path(folder).expanduser().resolve()

    def parse(target: Path, path: str) -> str | None:
        try:
            return parse_document(target.read_bytes(), path).body
        except (DocumentError, ValueError) as exc:
            log.debug("cannot read %s for an answer: %s", path, exc)
            return None

    @lru_cache(maxsize=CACHED_BODIES)
    def kept(target: Path, path: str, size: int, mtime_ns: int) -> str | None:  # noqa: ARG001
        return parse(target, path)

    def read(path: str) -> str | None:
        target = (root / path).resolve()
        if not target.is_relative_to(root):
            return None
        try:
            st = target.stat()
            if not stat.S_ISREG(st.st_mode):
                return None
            if st.st_size > CACHED_BYTES:
                return parse(target, path)
            return kept(target, path, st.st_size, st.st_mtime_ns)
        except OSError as exc:  # not cached: the next read tries again
            log.debug("cannot read %s for an answer: %s", path, exc)
            return None

    return read


def document_reader(kb: Any) -> Reader:
    """``path → (title, body)`` over ``kb`` (a ``KnowledgeBase``): documents of its catalog only."""
    body_of = runbook_reader(kb.settings.knowledge_base_dir)

    def read(path: str) -> tuple[str, str] | None:
        doc = kb.catalog.by_path(path)
        body = body_of(path) if doc is not None else None
        return None if body is None else (doc.title, body)

    return read
