"""Reading a runbook's whole body by the path a lookup cited (the one part of the diagnosis that
touches the disk)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from retrieval.documents import parse_document


def runbook_reader(folder: str | Path) -> Callable[[str], str | None]:
    """A reader of ``folder``'s runbooks: the body of ``path``, or None when it is not a file
    inside the folder (a path from a tool result never leaves the knowledge base)."""
    root = Path(folder).expanduser().resolve()

    def read(path: str) -> str | None:
        target = (root / path).resolve()
        if not target.is_relative_to(root) or not target.is_file():
            return None
        try:
            return parse_document(target.read_bytes(), path).body
        except (OSError, ValueError):
            return None

    return read
