"""Reads a runbook of the knowledge base by path, for answers that quote its sections.

Only documents the catalog holds are read (an answer cites only documents in the base), from the
knowledge-base folder they were imported from; a file gone or unparsable reads as None and the
answer falls back to the lookup's own excerpt.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

from retrieval.documents import DocumentError, parse_document

log = logging.getLogger(__name__)
Reader = Callable[[str], "tuple[str, str] | None"]


def document_reader(kb: Any) -> Reader:
    """``path → (title, Markdown body)`` over ``kb`` (a ``KnowledgeBase``)."""
    folder = Path(kb.settings.knowledge_base_dir)

    def read(path: str) -> tuple[str, str] | None:
        doc = kb.catalog.by_path(path)
        file = folder / path
        if doc is None or not file.is_file() or folder.resolve() not in file.resolve().parents:
            return None
        try:
            return doc.title, parse_document(file.read_bytes(), path).body
        except (OSError, DocumentError) as exc:
            log.debug("cannot read %s for an answer: %s", path, exc)
            return None

    return read
