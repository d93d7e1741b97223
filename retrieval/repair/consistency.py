"""Do the documents table, the vector store and the in-memory catalog agree, document by document?
Pure: given what each one holds, say what differs and what repairs it."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from persistence.models import ApiDocument, DocumentStatus

# An import owns these rows right now (here or on another worker): their vectors are in flux.
IN_FLIGHT = {DocumentStatus.PENDING, DocumentStatus.PROCESSING}


@dataclass
class Audit:
    reimport: list[ApiDocument] = field(default_factory=list)  # INDEXED, vectors ≠ chunk_count
    orphans: list[str] = field(default_factory=list)  # doc_ids whose vectors nothing should hold
    catalog_stale: bool = (
        False  # the catalog (L0) holds other documents than the enabled INDEXED rows
    )
    missing: int = 0  # chunks the INDEXED rows count that the vector store lacks
    extra: int = 0  # vectors beyond those counts (duplicates, orphans)

    @property
    def clean(self) -> bool:
        return not (self.reimport or self.orphans or self.catalog_stale)

    def summary(self) -> str:
        parts = []
        if self.reimport:
            parts.append(
                f"{len(self.reimport)} document(s) whose vectors differ from their chunk count "
                f"({self.missing} missing, {self.extra} extra)"
            )
        if self.orphans:
            parts.append(f"vectors of {len(self.orphans)} document(s) that are not indexed")
        if self.catalog_stale:
            parts.append("a keyword index (L0) that differs from the indexed documents")
        return "; ".join(parts) or "nothing"


def audit(rows: Iterable[ApiDocument], vectors: Mapping[str, int], catalog_ids: set[str]) -> Audit:
    """Compare each row with its vectors (``doc_id → count``) and with the catalog's doc_ids."""
    out = Audit()
    indexed: set[str] = set()
    known: set[str] = set()
    for row in rows:
        known.add(row.doc_id)
        held = vectors.get(row.doc_id, 0)
        if row.status == DocumentStatus.INDEXED:
            if row.enabled:  # a disabled document keeps its vectors but is out of the catalog
                indexed.add(row.doc_id)
            if held != row.chunk_count:
                out.reimport.append(row)
                out.missing += max(row.chunk_count - held, 0)
                out.extra += max(held - row.chunk_count, 0)
        elif row.status not in IN_FLIGHT and held:  # FAILED: its vectors were meant to go
            out.orphans.append(row.doc_id)
            out.extra += held
    for doc_id, held in vectors.items():
        if doc_id not in known:  # its row was deleted
            out.orphans.append(doc_id)
            out.extra += held
    out.catalog_stale = catalog_ids != indexed
    return out
