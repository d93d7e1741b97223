"""The seed's document fields, pure: frontmatter reading, the form over the frontmatter, chunk
parameter ranges, and a disabled document not counted as the knowledge base being out of step."""

from __future__ import annotations

import pytest

from persistence.models import ApiDocument, DocumentStatus
from retrieval.parsing.doc_fields import DocFields, chunking_problem
from retrieval.parsing.documents import DocumentError, parse_document
from retrieval.repair.consistency import audit

FRONT = b"""---
title: Kafka lag
faultSource: kafka
api_name: /api/consume
version: 2.0
chunk_size: 120
---
# Kafka lag

Body.
"""


def test_frontmatter_fields_in_either_spelling() -> None:
    f = parse_document(FRONT, "mq/kafka.md").fields
    assert f == DocFields("kafka", "/api/consume", "2.0", 120, None)


@pytest.mark.parametrize(
    ("line", "field"),
    [
        (b"chunk_size: ten", "chunk_size"),
        (b"chunkOverlap: -1", "chunkOverlap"),
        (b"fault_source: [a, b]", "fault_source"),
        (b"version: " + b"v" * 40, "version"),
    ],
)
def test_bad_frontmatter_fields_name_the_field(line: bytes, field: str) -> None:
    with pytest.raises(DocumentError, match=field):
        parse_document(b"---\ntitle: x\n" + line + b"\n---\nbody\n", "mq/x.md")


def test_the_form_wins_and_says_what_it_overrode() -> None:
    front = DocFields(fault_source="kafka", api_name="/api/consume", chunk_size=120)
    merged, warnings = DocFields(fault_source="relay", version="v3").over(front)
    assert merged == DocFields("relay", "/api/consume", "v3", 120, None)
    assert warnings == ["upload faultSource 'relay' overrides the frontmatter's 'kafka'"]
    assert DocFields(fault_source="kafka").over(front)[1] == []  # the same value: no warning


@pytest.mark.parametrize(
    ("size", "overlap", "problem"),
    [
        (None, None, ""),
        (64, 32, ""),
        (254, 0, ""),
        (31, None, "below 32"),
        (255, None, ""),  # above the window: capped with a warning, not refused
        (500, 50, ""),  # the seed's defaults
        (64, 33, "0–32"),
        (None, 300, "0–250"),  # half the configured 500, before the cap
    ],
)
def test_chunk_ranges_follow_the_model_window(size, overlap, problem) -> None:  # noqa: ANN001
    found = chunking_problem(size, overlap, default_size=500, window=254)
    assert (problem in found) if problem else found == ""


def test_sizes_above_the_window_are_capped_with_a_warning_naming_both_numbers() -> None:
    from retrieval.parsing.doc_fields import chunking_warnings

    (size,) = chunking_warnings(500, 50, default_size=500, window=254)
    assert "chunkSize 500" in size and "254-token window" in size
    both = chunking_warnings(500, 200, default_size=500, window=254)
    assert len(both) == 2 and "chunkOverlap 200" in both[1] and "127 is used" in both[1]
    assert chunking_warnings(254, 50, default_size=500, window=254) == []


def test_a_disabled_document_is_not_out_of_step() -> None:
    row = ApiDocument(
        doc_id="d1",
        file_name="a.md",
        file_path="ops/a.md",
        status=DocumentStatus.INDEXED,
        chunk_count=3,
        enabled=False,
    )
    assert audit([row], {"d1": 3}, catalog_ids=set()).clean
    row.enabled = True
    assert audit([row], {"d1": 3}, catalog_ids=set()).catalog_stale
