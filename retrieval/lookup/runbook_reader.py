"""Reading a runbook's whole text by the path a lookup cited, for answers and reports that quote
its sections (a lookup result carries only excerpts).

Only files inside the knowledge-base folder are read (a path from a tool result never leaves it),
and ``document_reader`` only documents the catalog holds (an answer cites only documents in the
base); a file gone or unparsable reads as None and the caller falls back to the lookup's excerpt.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

from retrieval.parsing.documents import DocumentError, parse_document

log = logging.getLogger(__name__)
BodyReader = Callable[[str], "str | None"]  # path → Markdown body
Reader = Callable[[str], "tuple[str, str] | None"]  # path → (title, Markdown body)


def runbook_reader(folder: str | Path) -> BodyReader:
    """The body of ``path`` inside ``folder``, or None."""
    root = Path(folder).expanduser().resolve()

    def read(path: str) -> str | None:
        target = (root / path).resolve()
        if not target.is_relative_to(root) or not target.is_file():
            return None
        try:
            return parse_document(target.read_bytes(), path).body
        except (OSError, DocumentError, ValueError) as exc:
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
